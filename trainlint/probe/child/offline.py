"""Which hub resource a script was loading when it failed offline (child side, standard library only):
read from the frames of the traceback, for the ``asset-missing`` status and the classifiers."""

from __future__ import annotations

import traceback


def offline_resource(exc: BaseException) -> tuple[str, str] | None:
    """(kind, name) of the hub resource being loaded where the exception was raised, if any: the
    outermost ``from_pretrained`` (model/tokenizer), ``load_dataset`` or ``evaluate.load`` frame."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_name
        filename = frame.f_code.co_filename.replace("\\", "/")
        loc = frame.f_locals
        if name in ("from_pretrained", "cached_file", "cached_files"):
            for key in ("pretrained_model_name_or_path", "path_or_repo_id"):
                if key in loc:
                    return "model", str(loc[key])
            return "model", "?"
        if name in ("load_dataset", "load_dataset_builder") and "/datasets/" in filename:
            return "dataset", str(loc.get("path", "?"))
        if name == "load" and "/evaluate/" in filename:
            return "metric", str(loc.get("path", "?"))
    return None
