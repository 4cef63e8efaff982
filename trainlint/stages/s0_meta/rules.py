"""TL0xx: the file itself. These are reported by the engine, not by a visitor."""

from trainlint.findings import Severity
from trainlint.rule import Rule, register


@register
class SyntaxError_(Rule):
    """The file does not parse as Python."""

    code = "TL001"
    name = "syntax-error"
    severity = Severity.ERROR


@register
class UnreadableFile(Rule):
    """The file cannot be read: missing, unreadable, binary or not UTF-8."""

    code = "TL002"
    name = "unreadable-file"
    severity = Severity.ERROR


@register
class InternalError(Rule):
    """A rule raised while checking this file: a bug in trainlint (exit code 2)."""

    code = "TL003"
    name = "internal-error"
    severity = Severity.ERROR
