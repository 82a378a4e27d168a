"""Section 12 against a model, through HTTP: seeded random writes, deletions and reference changes
over a few dozen objects; every `query` record, applied to a client's copy of the window as the
contract says (removals highest first, then insertions lowest first, then updates), must give what
`POST /v1/query` answers after each revision: the ids, the selected values and `total`."""

import random

import pytest

from conftest import EventStreamReader

DEFINITIONS = [
    # Two sort keys, a limit, a selected value through a reference.
    {"class": "Order", "where": [["status", "==", "open"]], "orderBy": [["rank", "desc"], ["group", "asc"]],
     "limit": 4, "select": ["rank", "customer.country"]},
    # A condition and an order through a reference.
    {"class": "Order", "where": [["customer.country", "in", ["FR", "DE"]], ["rank", ">=", 20]],
     "orderBy": [["customer.name", "asc"], ["rank", "asc"]], "limit": 3, "select": ["status"]},
    # A range and a prefix, in id order.
    {"class": "Order", "where": [["rank", "<", 60], ["group", "prefix", "g1"]], "limit": 5, "select": ["rank"]},
]


def ok(response, expected=(200, 201, 204)):
    status, body = response
    assert status in expected, (status, body)
    return body


def apply(window, record):
    """One query record applied to a window of {"id", "values"}."""
    if record.get("initial"):
        window = []
    window = list(window)
    for removal in reversed(record["removed"]):
        assert window[removal["index"]]["id"] == removal["id"], (removal, window)
        del window[removal["index"]]
    for insertion in record["inserted"]:
        assert insertion["index"] <= len(window), (insertion, window)
        window.insert(insertion["index"], {"id": insertion["id"], "values": dict(insertion.get("new", {}))})
    for update in record["updated"]:
        assert window[update["index"]]["id"] == update["id"], (update, window)
        window[update["index"]]["values"].update(update.get("new", {}))
    return window


class World:
    def __init__(self, server, seed):
        self.server, self.chance = server, random.Random(seed)
        self.connection = server.connection()
        self.orders, self.serial = [], 0
        self.customers = [f"c{index}" for index in range(5)]
        ok(self.request("PUT", "/v1/classes/Customer", {"properties": {
            "name": {"type": "string"}, "country": {"type": "string"}}}))
        ok(self.request("PUT", "/v1/classes/Order", {"properties": {
            "status": {"type": "string"}, "rank": {"type": "integer"}, "group": {"type": "string"},
            "customer": {"type": "ref", "class": "Customer"}}}))
        for customer in self.customers:
            ok(self.request("POST", "/v1/objects", {"id": customer, "class": "Customer", "values": self.person()}))
        for _ in range(25):
            self.create_order()
        self.observer = ok(self.request("POST", "/v1/observers", {"lease": 600, "replay": 100000}))["id"]
        self.queries = []
        for definition in DEFINITIONS:
            body = dict(definition, options=["initial", "new"])
            self.queries.append((ok(self.request("POST", f"/v1/observers/{self.observer}/queries", body))["query"]["id"],
                                 definition))
        self.windows = {query: [] for query, _ in self.queries}
        self.totals = {}
        self.stream = EventStreamReader(server, f"/v1/observers/{self.observer}/events?progress=1")
        self.seen = 0
        self.applied = 0

    def request(self, method, path, body=None):
        return self.server.request(method, path, body, connection=self.connection)

    def person(self):
        return {"name": self.chance.choice(["Ann", "Bo", "Cy"]), "country": self.chance.choice(["FR", "DE", "UK"])}

    def order_values(self):
        return {"status": self.chance.choice(["open", "closed"]), "rank": self.chance.randrange(100),
                "group": self.chance.choice(["g1", "g10", "g2"]),
                "customer": {"$ref": self.chance.choice(self.customers)}}

    def create_order(self):
        self.serial += 1
        status, _ = self.request("POST", "/v1/objects", {"id": f"o{self.serial}", "class": "Order",
                                                         "values": self.order_values()})
        if status == 201:  # refused while its customer is deleted
            self.orders.append(f"o{self.serial}")

    def step(self):
        chance = self.chance
        if len(self.orders) < 5:
            self.create_order()
            return
        order, customer = chance.choice(self.orders), chance.choice(self.customers)
        move = chance.randrange(10)
        if move < 3:
            self.request("PUT", f"/v1/objects/{order}/values/rank", {"value": chance.randrange(100)})
        elif move == 3:
            self.request("PUT", f"/v1/objects/{order}/values/status", {"value": chance.choice(["open", "closed"])})
        elif move == 4:
            self.request("PUT", f"/v1/objects/{order}/values/customer", {"value": {"$ref": customer}})
        elif move == 5:
            self.request("PATCH", f"/v1/objects/{customer}", {"values": self.person()})
        elif move == 6:
            self.request("PATCH", f"/v1/objects/{order}", {"values": self.order_values()})
        elif move == 7:
            self.request("DELETE", f"/v1/objects/{order}")
            self.orders.remove(order)
        elif move == 8:
            self.create_order()
        else:
            # A customer goes (its orders' references read as null), or comes back.
            if self.request("GET", f"/v1/objects/{customer}")[0] == 200:
                self.request("DELETE", f"/v1/objects/{customer}")
            else:
                self.request("POST", "/v1/objects", {"id": customer, "class": "Customer", "values": self.person()})

    def check(self):
        """Waits for a delivery barrier past the last write, applies the records before it, compares."""
        revision = ok(self.request("POST", f"/v1/observers/{self.observer}/progress"))["revision"]
        self.stream.wait_for(lambda event, _, data: event == "progress" and data["revision"] >= revision, timeout=10)
        events = list(self.stream.events)
        for event, _, data in events[self.seen:]:
            if event == "query":
                self.windows[data["query"]] = apply(self.windows[data["query"]], data)
                self.totals[data["query"]] = data["total"]
                self.applied += 1
        self.seen = len(events)
        for query, definition in self.queries:
            answer = ok(self.request("POST", "/v1/query", definition))
            assert self.windows[query] == answer["objects"], (query, revision)
            assert self.totals[query] == answer["total"], (query, revision)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_records_applied_by_a_client_always_give_the_window(server_factory, seed):
    world = World(server_factory().start(), seed)
    world.check()
    for _ in range(200):
        world.step()
        world.check()
    assert world.applied > 100, f"only {world.applied} records"
