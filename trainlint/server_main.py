"""``trainlint server``: answer ``initialize`` at once, then load the LSP side (:mod:`trainlint.server_lsp`:
pygls, lsprotocol) and serve. The standard-library side it answers from is :mod:`trainlint.server`."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import BinaryIO

from trainlint.server import (SERVER_MODULES, missing_server_packages, read_message, static_initialize_result,
                              write_message)


def _import_lsp(box: dict) -> None:
    try:
        import trainlint.server_lsp  # noqa: F401

        box["ok"] = True
    except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
        box["error"] = exc


def start(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Serve LSP on stdin/stdout until the client says exit. Logs go to stderr.

    ``initialize`` is answered from :func:`static_initialize_result` before the LSP library is
    imported (an import running meanwhile would hold the GIL and delay the answer); the request is
    then replayed into the server (its result is not sent again)."""
    logging.basicConfig(level=os.environ.get("TRAINLINT_LOG", "WARNING").upper(),
                        format="trainlint-server %(levelname)s %(name)s: %(message)s")
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    box: dict = {}
    loader = threading.Thread(target=_import_lsp, args=(box,), name="trainlint-import", daemon=True)
    first = read_message(stdin)  # the import starts after the answer: it would hold the GIL meanwhile
    answered = None
    if first is not None:
        try:
            data = json.loads(first)
        except ValueError:
            data = None
        if (isinstance(data, dict) and data.get("method") == "initialize" and data.get("jsonrpc") == "2.0"
                and isinstance(data.get("id"), (int, str)) and not isinstance(data.get("id"), bool)
                and isinstance(data.get("params"), dict) and isinstance(data["params"].get("capabilities"), dict)):
            result = static_initialize_result(data["params"])
            write_message(stdout, {"jsonrpc": "2.0", "id": data["id"], "result": result})
            answered = result
    loader.start()
    loader.join()
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in SERVER_MODULES:
            sys.stderr.write(missing_server_packages(exc.name) + "\n")
            sys.exit(2)
        raise exc
    from trainlint.server_lsp import create_server

    server = create_server()
    code = server.serve(stdin, stdout, first=first, answered=answered)
    sys.stdout.flush()
    os._exit(code)  # no interpreter teardown: the stdin reader may still be blocked in read()
