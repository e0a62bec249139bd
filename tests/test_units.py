import pytest

from biossd.core.units import format_size, parse_size


@pytest.mark.parametrize(
    "text,expected",
    [("4096", 4096), ("64M", 64 << 20), ("1G", 1 << 30), ("1.5G", 3 << 29), ("2GiB", 2 << 30), ("8k", 8192)],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "G", "1X", "-1M", "1 0M"])
def test_parse_size_rejects_with_the_text(bad):
    with pytest.raises(ValueError, match="cannot read size"):
        parse_size(bad)


@pytest.mark.parametrize("n,text", [(64 << 20, "64M"), (1 << 30, "1G"), (1000, "1000"), (3 << 29, "1536M")])
def test_format_size(n, text):
    assert format_size(n) == text
    assert parse_size(format_size(n)) == n
