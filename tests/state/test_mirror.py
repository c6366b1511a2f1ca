"""The mirror's bookkeeping, table by table: which invalidations it keeps and which it obeys."""

from gateway.state.base import HistoryMark
from gateway.state.mirror import Known, Mirror

A, B = HistoryMark(1, "a"), HistoryMark(2, "b")


def mirror_with(session: str = "s", mark: HistoryMark = A) -> Mirror:
    mirror = Mirror("lg:")
    mirror.subscribed()
    epoch = mirror.begin_read(session)
    mirror.end_read(session, epoch, Known(mark, 0.0))
    return mirror


def test_untrusted_until_subscribed_and_after_the_listener_is_lost():
    mirror = Mirror("lg:")
    epoch = mirror.begin_read("s")
    mirror.end_read("s", epoch, Known(A, 0.0))
    assert mirror.known("s") is None  # learned while nobody listened: not kept
    mirror = mirror_with()
    assert mirror.known("s").mark == A
    mirror.lost()
    assert mirror.known("s") is None and len(mirror) == 0


def test_an_invalidation_of_the_mark_forgets_it_unless_it_is_our_own_echo():
    mirror = mirror_with()
    mirror.expect("s")
    mirror.wrote("s", B, 1.0)
    mirror.invalidated([b"lg:h:{s}"])  # our write's echo
    assert mirror.known("s").mark == B
    mirror.invalidated([b"lg:h:{s}"])  # somebody else's write
    assert mirror.known("s") is None


def test_any_change_of_vetoes_or_compaction_forgets_the_session():
    for key in (b"lg:v:{s}", b"lg:c:{s}"):
        mirror = mirror_with()
        mirror.expect("s")  # an echo due for the mark does not excuse other keys
        mirror.invalidated([key])
        assert mirror.known("s") is None


def test_other_sessions_and_a_flush():
    mirror = mirror_with("s")
    mirror.invalidated([b"lg:h:{other}", b"lg:v:{other}"])
    assert mirror.known("s").mark == A
    mirror.invalidated(None)  # FLUSHDB / FLUSHALL
    assert mirror.known("s") is None and mirror.trusted


def test_a_read_overtaken_by_a_foreign_change_is_not_kept():
    mirror = Mirror("lg:")
    mirror.subscribed()
    epoch = mirror.begin_read("s")
    mirror.expect("s")  # the read writes the mark
    mirror.invalidated([b"lg:h:{s}"])  # its echo
    mirror.invalidated([b"lg:h:{s}"])  # and another replica's write, while the read was in flight
    mirror.end_read("s", epoch, Known(A, 0.0))
    assert mirror.known("s") is None
    epoch = mirror.begin_read("s")  # the next read is clean again
    mirror.end_read("s", epoch, Known(B, 0.0))
    assert mirror.known("s").mark == B


def test_a_read_across_a_lost_listener_is_not_kept():
    mirror = Mirror("lg:")
    mirror.subscribed()
    epoch = mirror.begin_read("s")
    mirror.lost()
    mirror.subscribed()
    mirror.end_read("s", epoch, Known(A, 0.0))
    assert mirror.known("s") is None


def test_bounded_by_max_sessions_oldest_first():
    mirror = Mirror("lg:", max_sessions=2)
    mirror.subscribed()
    for session in ("s1", "s2", "s3"):
        mirror.end_read(session, mirror.begin_read(session), Known(A, 0.0))
    assert mirror.known("s1") is None and mirror.known("s3") is not None and len(mirror) == 2


def test_a_session_holding_more_than_its_mark_is_never_kept():
    mirror = Mirror("lg:")
    mirror.subscribed()
    mirror.end_read("s", mirror.begin_read("s"), None)
    assert mirror.known("s") is None
