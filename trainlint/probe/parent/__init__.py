"""The parent side of the probe: what runs in trainlint's own process (see ../PROTOCOL.md): the runner,
the sandbox's command line, the child's run and its events, the report. It may import anything of
trainlint; the child side (``../child/``) never imports it."""
