class Stack:
    def __init__(self) -> None:
        self._items: list[object] = []

    def push(self, item: object) -> None:
        self._items.append(item)

    def pop(self) -> object:
        if not self._items:
            raise IndexError("pop from an empty stack")
        return self._items.pop()

    def __len__(self) -> int:
        return len(self._items)
