"""``python -m trainlint.probe.child``: the probe's child process (see ../PROTOCOL.md and main.py)."""

from trainlint.probe.child.main import exit_now, main

if __name__ == "__main__":
    # Skip interpreter teardown (framework atexit handlers, thread joins): the parent has the events.
    exit_now(main())
