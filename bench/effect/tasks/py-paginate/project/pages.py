def paginate(items: list[int], page: int, size: int) -> list[int]:
    """The items of page `page` (the first page is 1), `size` items a page."""
    if page < 1:
        raise ValueError("pages start at 1")
    start = page * size
    return items[start : start + size]
