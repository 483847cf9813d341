"""systemd's word splitting for unit file settings: quotes anywhere, C escapes, and where it gives up."""

from __future__ import annotations

import pytest

from proxyfleet.core.systemd.unitquoting import QuotingError, split_words, unescape_one, words_before_error


def test_the_documented_example() -> None:
    # systemd.exec(5), Environment=
    assert split_words('"VAR1=word1 word2" VAR2=word3 "VAR3=$word 5 6"') == [
        "VAR1=word1 word2", "VAR2=word3", "VAR3=$word 5 6"]


def test_quotes_open_and_close_anywhere_in_a_word() -> None:
    """As systemd-analyze 252 reads them (the man page says a quote starts a word)."""
    assert split_words('K=a"b c"d') == ["K=ab cd"]
    assert split_words('H="quoted inside"') == ["H=quoted inside"]
    assert split_words("W='it''s'") == ["W=its"]
    assert split_words('"A=1"x') == ["A=1x"]


def test_escapes_inside_and_outside_quotes() -> None:
    assert split_words(r'"C=\x41\s\t"') == ["C=A \t"]
    assert split_words(r"'C=\x41'") == ["C=A"]  # single quotes do not protect from escapes
    assert split_words(r"V=\101\u00e9") == ["V=Aé"]
    assert split_words(r"Y=end\\") == ["Y=end\\"]
    with pytest.raises(QuotingError):  # "\ " is no C escape: systemd-analyze says "Invalid syntax"
        split_words(r"X=a\ b")


def test_an_unknown_escape_or_an_open_quote_ends_the_line_keeping_the_words_before() -> None:
    words, error = words_before_error(r"A=1 D=e\=f B=2")
    assert words == ["A=1"] and isinstance(error, QuotingError)
    words, error = words_before_error('A=1 "M=unterminated')
    assert words == ["A=1"] and error is not None
    with pytest.raises(QuotingError):
        split_words(r"L=\q")


def test_byte_escapes_past_ascii_are_bytes_not_characters() -> None:
    assert unescape_one(r"xe9", 0) == ("\udce9", 3)  # one byte, not é: not UTF-8 on its own
    assert unescape_one("u00e9", 0) == ("é", 5)
    for bad in ("x00", "000", "400", "x4", "u12", "z"):
        with pytest.raises(QuotingError):
            unescape_one(bad, 0)
