"""controller/terminal.py: what each command does with a server's text before a terminal sees
it (the commands' own tests show it done at each place)."""

from __future__ import annotations

from controller.terminal import escaped


def test_text_without_controls_is_shown_as_it_is() -> None:
    assert escaped("Degraded (ForwardFailure): remote write 503 … ✔ 日本") == (
        "Degraded (ForwardFailure): remote write 503 … ✔ 日本"
    )


def test_each_control_is_written_out() -> None:
    assert escaped("\x1b[2J\r\n\t\x00\x7f\x9b") == "\\x1b[2J\\x0d\\x0a\\x09\\x00\\x7f\\x9b"
    assert escaped("a\u202eb\u2066c\u2028d") == "a\\u202eb\\u2066c\\u2028d"


def test_a_lone_surrogate_json_can_carry_is_printable_afterwards() -> None:
    assert escaped("a\ud800b").encode("utf-8") == b"a\\ud800b"


def test_anything_is_shown_as_its_text() -> None:
    assert escaped(ValueError("bad\nline")) == "bad\\x0aline"
