import unittest

from roman import from_roman


class FromRoman(unittest.TestCase):
    def test_subtraction(self):
        self.assertEqual(from_roman("IV"), 4)
        self.assertEqual(from_roman("IX"), 9)

    def test_year(self):
        self.assertEqual(from_roman("MCMXCIV"), 1994)

    def test_adding(self):
        self.assertEqual(from_roman("XVI"), 16)

    def test_lowercase(self):
        self.assertEqual(from_roman("xii"), 12)


if __name__ == "__main__":
    unittest.main()
