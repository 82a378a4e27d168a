"""Section 15 against a model, through HTTP (issue 43): 1,000 seeded random transactions over 20
accounts, transfers of one to three amounts (each operation seeing the ones before it), receipts
created, notifications posted, with random `expect`s that hold or fail and, in some, one refused
operation. The model says each answer (200 and the next revision, or the refusal's status, code
and index, with no revision taken); the balances equal the model's and the total is conserved."""

import random

import pytest

from conftest import ok

ACCOUNTS = [f"a{index}" for index in range(20)]
INITIAL = 500
TRANSACTIONS = 1000


class World:
    def __init__(self, server, seed):
        self.server, self.chance = server, random.Random(seed)
        self.connection = server.connection()
        for account in ACCOUNTS:
            ok(*self.request("POST", "/v1/objects", {"id": account, "values": {"balance": INITIAL}}), expected=(201,))
        self.balances = dict.fromkeys(ACCOUNTS, INITIAL)
        self.receipts, self.refused_receipts, self.serial = set(), set(), 0
        self.revision = ok(*self.request("GET", "/v1/stats"))["revision"]
        self.outcomes = {}

    def request(self, method, path, body=None):
        return self.server.request(method, path, body, connection=self.connection)

    def read(self, account):
        """The account's revision now (and a check of its balance against the model)."""
        body = ok(*self.request("GET", f"/v1/objects/{account}"))
        assert body["values"]["balance"] == self.balances[account], (account, body)
        return body["revision"]

    def expectation(self):
        """A random `expect` entry and whether it holds: (entry, None) or (entry, its failure code)."""
        chance, account = self.chance, self.chance.choice(ACCOUNTS)
        kind = chance.randrange(4)
        if kind == 0:
            floor = chance.randrange(0, 2 * INITIAL)
            holds = self.balances[account] >= floor
            return {"object": account, "where": [["balance", ">=", floor]]}, None if holds else "conditionFailed"
        if kind == 1:
            revision = self.read(account)
            stale = chance.random() < 0.5
            return {"object": account, "ifRevision": revision - stale}, "revisionMismatch" if stale else None
        if kind == 2:
            exists = chance.random() < 0.7
            return {"object": account, "exists": exists}, None if exists else "conditionFailed"
        missing = f"r{self.serial + 1000000}"
        exists = chance.random() < 0.3
        return {"object": missing, "exists": exists}, "conditionFailed" if exists else None

    def fault(self, balances):
        """One operation its single request refuses: (operation, status, code)."""
        chance, account = self.chance, self.chance.choice(ACCOUNTS)
        return chance.choice([
            ({"op": "transfer", "object": account}, 400, "invalidRequest"),
            ({"op": "set", "object": "nobody", "keyPath": "balance", "value": 1}, 404, "notFound"),
            ({"op": "create", "id": account, "values": {}}, 409, "conflict"),
            ({"op": "set", "object": account, "keyPath": "bal ance", "value": 1}, 400, "invalidKeyPath"),
            ({"op": "set", "object": account, "keyPath": "balance", "value": 1, "ifRevision": self.read(account) - 1},
             412, "revisionMismatch"),
            ({"op": "mutate", "object": account, "keyPath": "balance", "kind": "insertion", "indexes": [0],
              "values": [1]}, 400, "notACollection"),
            ({"op": "post", "name": "Moved", "posting": "asap"}, 400, "invalidRequest"),
        ])

    def step(self):
        chance = self.chance
        balances, operations, receipts = dict(self.balances), [], set()
        for _ in range(chance.randint(1, 3)):
            source, target = chance.sample(ACCOUNTS, 2)
            amount = chance.randint(1, 80)
            balances[source] -= amount
            balances[target] += amount
            for account in (source, target):
                if chance.random() < 0.5:
                    operations.append({"op": "set", "object": account, "keyPath": "balance",
                                       "value": balances[account]})
                else:
                    operations.append({"op": "patch", "object": account, "values": {"balance": balances[account]}})
        if chance.random() < 0.3:
            self.serial += 1
            receipts.add(f"r{self.serial}")
            operations.append({"op": "create", "id": f"r{self.serial}", "values": {"n": self.serial}})
        if chance.random() < 0.1:
            operations.append({"op": "post", "name": "Moved", "userInfo": {"n": len(operations)}})
        expects, failing = [], {}
        refused = None
        if chance.random() < 0.2:
            operation, status, code = self.fault(balances)
            index = chance.randrange(len(operations) + 1)
            operations.insert(index, operation)
            refused = (status, code, "operation", {index})
        else:
            for index in range(chance.choice([0, 0, 1, 2])):
                entry, failure = self.expectation()
                expects.append(entry)
                if failure:
                    failing[index] = failure
        body = {"operations": operations, **({"expect": expects} if expects else {})}
        if failing:
            codes = set(failing.values())
            refused = (412, codes, "expect", set(failing))
        status, answer = self.request("POST", "/v1/transactions", body)
        if refused is None:
            assert status == 200, (body, status, answer)
            self.revision += 1
            assert answer["revision"] == self.revision, "one revision per transaction"
            assert len(answer["results"]) == len(operations) and "id" not in answer, answer
            self.balances = balances
            self.receipts |= receipts
            self.outcomes["applied"] = self.outcomes.get("applied", 0) + 1
            return
        expected_status, codes, member, indexes = refused
        error = answer["error"] if isinstance(answer, dict) else {}
        assert status == expected_status and error.get("code") in (codes if isinstance(codes, set) else {codes}), \
            (body, status, answer)
        assert error["details"][member] in indexes, (body, answer)
        self.outcomes[error["code"]] = self.outcomes.get(error["code"], 0) + 1
        self.refused_receipts |= receipts
        assert ok(*self.request("GET", "/v1/stats"))["revision"] == self.revision, "a refusal takes no revision"

    def check(self):
        for account in ACCOUNTS:
            self.read(account)
        assert sum(self.balances.values()) == INITIAL * len(ACCOUNTS)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_transactions_leave_the_balances_of_the_model(server_factory, seed):
    world = World(server_factory().start(), seed)
    for step in range(TRANSACTIONS):
        world.step()
        if step % 100 == 99:
            world.check()
    world.check()
    for receipt in world.receipts:
        assert world.request("GET", f"/v1/objects/{receipt}")[0] == 200, receipt
    for receipt in world.refused_receipts:
        assert world.request("GET", f"/v1/objects/{receipt}")[0] == 404, f"{receipt} of a refused transaction"
    outcomes = world.outcomes
    assert outcomes.get("applied", 0) > 500 and outcomes.get("conditionFailed", 0) > 20 and \
        outcomes.get("revisionMismatch", 0) > 20 and outcomes.get("invalidRequest", 0) > 10, outcomes
