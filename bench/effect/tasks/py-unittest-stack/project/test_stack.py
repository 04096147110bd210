import unittest

from stack import Stack


class StackTest(unittest.TestCase):
    def test_peek_keeps_the_item(self):
        s = Stack()
        s.push(1)
        s.push(2)
        self.assertEqual(s.peek(), 2)
        self.assertEqual(len(s), 2)

    def test_peek_empty(self):
        with self.assertRaises(IndexError):
            Stack().peek()

    def test_pop(self):
        s = Stack()
        s.push("a")
        self.assertEqual(s.pop(), "a")
        self.assertEqual(len(s), 0)


if __name__ == "__main__":
    unittest.main()
