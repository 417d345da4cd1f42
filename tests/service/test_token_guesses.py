"""The wrong-token table's own rules, on a clock the test moves: the window, the refusal's end, the bound on its
size, and who counts as one client (the doors that use it are tested through the real servers in
tests/gateway/test_token_guesses.py)."""

from __future__ import annotations

from secondbrain.service.token_guesses import TokenGuesses, client_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def guesses(clock: Clock, capacity: int = 100) -> TokenGuesses:
    return TokenGuesses(allowed=3, window=60, refusal=30, capacity=capacity, clock=clock)


def test_a_client_is_refused_after_the_allowed_wrong_tokens_until_the_refusal_ends() -> None:
    clock = Clock()
    table = guesses(clock)
    for _ in range(2):
        table.wrong("203.0.113.7")
    assert table.refused_for("203.0.113.7") == 0 and not table.refusing_anyone()
    table.wrong("203.0.113.7")
    assert table.refused_for("203.0.113.7") == 30 and table.refusing_anyone()
    assert table.refused_for("203.0.113.8") == 0, "another client is not refused"
    clock.now += 29.5
    assert table.refused_for("203.0.113.7") == 0.5
    assert "203.0.113.7" in table.refusal_message("203.0.113.7", 0.5) and "1 s more" in table.refusal_message("x", 0.5)
    clock.now += 0.5
    assert table.refused_for("203.0.113.7") == 0 and not table.refusing_anyone()


def test_wrong_tokens_spread_wider_than_the_window_are_not_refused() -> None:
    clock = Clock()
    table = guesses(clock)
    for _ in range(10):
        table.wrong("203.0.113.7")
        table.wrong("203.0.113.7")
        clock.now += 61
    assert table.refused_for("203.0.113.7") == 0


def test_the_table_forgets_the_client_wrong_longest_ago_beyond_its_capacity() -> None:
    clock = Clock()
    table = guesses(clock, capacity=2)
    for _ in range(3):
        table.wrong("203.0.113.1")
    table.wrong("203.0.113.2")
    table.wrong("203.0.113.3")
    assert len(table._clients) == 2
    assert table.refused_for("203.0.113.1") == 0, "forgotten: the one wrong longest ago"


def test_an_ipv6_client_is_its_64_and_a_mapped_ipv4_one_its_address() -> None:
    assert client_key("2001:db8:1:2::7") == client_key("2001:db8:1:2:ffff::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::7") != client_key("2001:db8:1:2::7")
    assert client_key("::ffff:203.0.113.7") == client_key("203.0.113.7") == "203.0.113.7"
    assert client_key("unknown") == "unknown"
    clock = Clock()
    table = guesses(clock)
    for host in ("2001:db8::1", "2001:db8::2", "2001:db8::3"):
        table.wrong(host)
    assert table.refused_for("2001:db8::ffff") == 30
