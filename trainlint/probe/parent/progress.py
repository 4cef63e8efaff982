"""The probe's progress on a terminal: one line on stderr, redrawn in place with a spinner, saying where
the run is (the sandbox starting, the script's framework imports, the script running, the training call
reached, each check). Only when stderr is a terminal and the run is not ``--quiet`` (the CLI decides);
the line is erased when the run ends, so the report reads as without it.
"""

from __future__ import annotations

import shutil
import time
from typing import TextIO

from trainlint.probe import protocol

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ASCII_FRAMES = "|/-\\"
#: Seconds between two redraws of the same text (the spinner's pace).
_PACE = 0.1


class Progress:
    """Fed with the child's events (:meth:`event`) and the clock (:meth:`tick`) by the parent's read loop."""

    def __init__(self, stream: TextIO, script: str) -> None:
        self.stream = stream
        self.script = script
        self.started = time.monotonic()
        self.text = "starting the sandbox"
        self.findings = 0
        self._frame = 0
        self._drawn = 0.0
        self._shown = False
        encoding = (getattr(stream, "encoding", None) or "ascii").lower()
        self._frames = _FRAMES if "utf" in encoding else _ASCII_FRAMES

    def status(self, text: str) -> None:
        self.text = text
        self._draw()

    def event(self, event: protocol.Event) -> None:
        """Where the run is now, from one of the child's events."""
        if isinstance(event, protocol.Sandbox):
            self.status(f"sandbox ready ({event.kind or 'not isolated'}), starting the interpreter")
        elif isinstance(event, protocol.Hello):
            self.status(f"Python {event.python} started, loading the probe")
        elif isinstance(event, protocol.Progress):
            if event.step == "script":
                self.status("script running")
            elif event.step == "import":
                self.status(f"script running: importing {event.name}")
            elif event.step == "reached":
                at = f" at {self.script}:{event.line}" if event.line else ""
                self.status(f"training call reached: {event.name}{at}")
        elif isinstance(event, protocol.Versions):
            loaded = ", ".join(f"{k} {v}" for k, v in event.versions.items())
            self.status(f"script running ({loaded} loaded)")
        elif isinstance(event, protocol.Phase):
            self.status(f"checking: {event.name}")
        elif isinstance(event, protocol.Finding):
            self.findings += 1
            self._draw()
        elif isinstance(event, protocol.End):
            self.status("run ended, collecting the results")

    def tick(self) -> None:
        if time.monotonic() - self._drawn >= _PACE:
            self._draw()

    def _draw(self) -> None:
        self._frame = (self._frame + 1) % len(self._frames)
        found = f", {self.findings} finding{'s' if self.findings != 1 else ''} so far" if self.findings else ""
        line = (f"{self._frames[self._frame]} probe {self.script}: {self.text} "
                f"({time.monotonic() - self.started:.0f}s{found})")
        width = shutil.get_terminal_size((80, 24)).columns - 1
        if len(line) > width > 10:
            line = line[: width - 1] + "…" if self._frames is _FRAMES else line[:width]
        self._write("\r" + line + "\x1b[K")
        self._drawn = time.monotonic()
        self._shown = True

    def close(self) -> None:
        """Erase the line (the report follows on a clean terminal)."""
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass
