from interval import Interval


def test_overlapping():
    assert Interval(1, 4).overlaps(Interval(3, 6))
    assert Interval(3, 6).overlaps(Interval(1, 4))


def test_one_inside_the_other():
    assert Interval(0, 10).overlaps(Interval(2, 3))
    assert Interval(2, 3).overlaps(Interval(0, 10))


def test_touching_ends_do_not_overlap():
    assert not Interval(1, 3).overlaps(Interval(3, 5))
    assert not Interval(3, 5).overlaps(Interval(1, 3))


def test_apart():
    assert not Interval(0, 1).overlaps(Interval(2, 3))


def test_contains():
    assert Interval(1, 3).contains(1)
    assert not Interval(1, 3).contains(3)
