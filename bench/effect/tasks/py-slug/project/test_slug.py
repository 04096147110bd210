from slug import slugify


def test_lowercase():
    assert slugify("Hello World") == "hello-world"


def test_punctuation():
    assert slugify("Hello, World!") == "hello-world"


def test_digits():
    assert slugify("Top 10 Tips") == "top-10-tips"
