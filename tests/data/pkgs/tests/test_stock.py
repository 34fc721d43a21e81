import shopfloor.stockroom as stockroom


def test_reserve_then_ship():
    room = stockroom.Stockroom(capacity=50)
    room.receive("TS-0042-XL", 10)
    number = room.reserve("TS-0042-XL", 4)
    assert room.free("TS-0042-XL") == 6
    assert room.ship(number) == 6
