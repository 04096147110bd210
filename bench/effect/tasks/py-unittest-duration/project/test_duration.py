import unittest

from duration import parse_duration


class ParseDuration(unittest.TestCase):
    def test_hours_and_minutes(self):
        self.assertEqual(parse_duration("1h30m"), 90)

    def test_minutes(self):
        self.assertEqual(parse_duration("45m"), 45)

    def test_not_a_duration(self):
        with self.assertRaises(ValueError):
            parse_duration("soon")


if __name__ == "__main__":
    unittest.main()
