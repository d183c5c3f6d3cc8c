#!/usr/bin/env python3
"""Checks FOCUS CSV exports against the FinOps Foundation's FOCUS 1.2
requirements model (model-1.2.json, see README.md): every rule that applies
to a GPU chargeback runs; a rule that fails fails the test.

Our own reading of the model, in Python's standard library only:
- A rule runs unless it is not Active, needs an ApplicabilityCriteria this
  dataset does not claim (CLAIMED below), is Dynamic (the model gives no
  check a machine can run on one export), or is a MAY (nothing to enforce).
  Each skip is printed with its reason.
- A rule whose Dependencies do not apply (criteria not claimed, or an
  optional column that is absent) does not apply either.
- Condition selects the rows a rule is about; a composite's Condition also
  holds for the rules it names with CheckModelRule.
- An alternative of an OR composite (InvoiceId-C-004-C "null when no
  invoice" or -C-005-C "not null when one") that does not hold is skipped:
  the OR decides, and fails when no alternative holds.
- Null is an empty CSV cell. CheckValue v holds where the cell is v;
  CheckNotValue v where it is not v (null is not 'Correction').
- Numbers are compared as exact decimals, never binary floats: ListCost is
  ListUnitPrice x PricingQuantity to the last digit.

Usage: focus_rules.py MODEL CURRENCIES EXPORT.csv...   (exit 1 on a failure)
"""
import csv
import datetime
import decimal
import json
import re
import sys

# ApplicabilityCriteria that fit gpuledger's chargeback: it measures usage (GPU-hours held),
# prices by unit from the operator's price list, names its account, bills provisioned resources
# (GPUs and MIG instances) of a type, has sub accounts (teams) and tags.
CLAIMED = {
    "ACCOUNT_NAMING_SUPPORTED", "USAGE_MEASUREMENT_SUPPORTED", "UNIT_PRICING_SUPPORTED",
    "PUBLIC_PRICE_LIST_SUPPORTED", "NEGOTIATED_PRICING_SUPPORTED", "SUB_ACCOUNT_SUPPORTED",
    "BILLING_BASED_ON_PROVISIONED_RESOURCES_SUPPORTED", "RESOURCE_TYPE_ASSIGNMENT_SUPPORTED",
    "TAGGING_SUPPORTED",
}

# Dynamic rules whose text is one static check after all: run as their Static twins are.
OWN_CHECKS = {
    # "The product of ContractedUnitPrice and PricingQuantity MUST match the ContractedCost ..."
    "ContractedCost-C-009-C": {"CheckFunction": "ColumnByColumnEqualsColumnValue", "ColumnAName": "ContractedUnitPrice",
                               "ColumnBName": "PricingQuantity", "ResultColumnName": "ContractedCost"},
}

NUMERIC = re.compile(r"^-?([0-9]*[.])?[0-9]+(E-?[0-9]+)?$")  # NumericFormat: no '+', E notation
DATETIME = re.compile(r"^[0-9]{4}-[0-1][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z$")
_SIZE = "b|Kb|Mb|Gb|Tb|Pb|Eb|B|KB|MB|GB|TB|PB|EB|Kib|Mib|Gib|Tib|Pib|Eib|KiB|MiB|GiB|TiB|PiB|EiB"
_ONE = "Year|Month|Day|Hour|Minute|Second"
_MANY = "Years|Months|Days|Hours|Minutes|Seconds"
_COUNT = r"[A-Za-z][A-Za-z0-9]*(?:\s+[A-Za-z][A-Za-z0-9]*)*"
UNIT = re.compile("|".join("(%s)" % p for p in (  # FOCUS UnitFormat's five shapes
    rf"^({_SIZE}|{_ONE}|{_MANY}|{_COUNT})$", rf"^({_SIZE}|{_COUNT})-({_MANY})$",
    rf"^({_SIZE}|{_COUNT}|{_MANY})/({_ONE})$", rf"^[0-9]+ ({_SIZE}|{_ONE}|{_MANY}|{_COUNT})$",
    rf"^({_SIZE}|{_COUNT}|{_MANY})/[0-9]+ ({_MANY})$")))


class Skip(Exception):
    pass


def exact(v):
    return decimal.Decimal(v) if NUMERIC.match(v) else None


def is_datetime(v):
    if not DATETIME.match(v):
        return False
    try:
        datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ")
        return True
    except ValueError:
        return False


def key_value(v):
    """KeyValueFormat: a JSON object, unique keys, scalar values."""
    seen = []
    try:
        obj = json.loads(v, object_pairs_hook=lambda pairs: seen.append(pairs) or dict(pairs))
    except ValueError:
        return False
    if not isinstance(obj, dict) or len(seen[-1]) != len(obj):
        return False
    return all(not isinstance(x, (dict, list)) for x in obj.values())


class Dataset:
    def __init__(self, path):
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            self.columns = next(reader)
            self.rows = [dict(zip(self.columns, [c if c != "" else None for c in r])) for r in reader]


class Evaluator:
    def __init__(self, model, currencies, data):
        self.rules = model["ModelRules"]
        self.currencies = currencies
        self.data = data
        self.results = {}  # rule id -> ("pass"|"fail"|"skip", reason)
        self.parents = {}  # rule id -> composites naming it with CheckModelRule
        for rid, r in self.rules.items():
            for item in r["ValidationCriteria"]["Requirement"].get("Items", []):
                if item.get("CheckFunction") == "CheckModelRule":
                    self.parents.setdefault(item["ModelRuleId"], []).append(rid)

    # --- row checks: True where the row keeps the requirement (row None: no row at all) ---
    def cell(self, row, col):
        return row.get(col) if row is not None else None

    def need(self, col):
        if col not in self.data.columns:
            raise AssertionError("column %s is absent" % col)

    def holds(self, check, row):
        fn = check.get("CheckFunction")
        if fn is None and len(check) == 1 and next(iter(check)) in ("AND", "OR"):  # {"AND": {...}} shorthand
            op, items = next(iter(check.items()))
            return self.holds({"CheckFunction": op, "Items": items if isinstance(items, list) else [items]}, row)
        if fn == "AND":
            return all(self.holds(i, row) for i in check["Items"])
        if fn == "OR":
            return any(self.holds(i, row) for i in check["Items"])
        if fn == "CheckModelRule":
            return self.rule_holds(check["ModelRuleId"])
        if fn == "ColumnPresent":
            return check["ColumnName"] in self.data.columns
        if fn == "CheckDistinctCount":
            return self.distinct_count(check)
        if row is None:
            return True
        if fn in ("CheckValue", "CheckNotValue"):
            # Two conditions of the model spell ColumnName "CheckCondition" (ResourceId-C-006-C, ResourceType-C-005-C).
            v, want = row.get(check.get("ColumnName", check.get("CheckCondition"))), check["Value"]
            same = v is None if want is None else v == str(want)
            return same if fn == "CheckValue" else not same
        if fn in ("CheckSameValue", "CheckNotSameValue"):
            a, b = row.get(check["ColumnAName"]), row.get(check["ColumnBName"])
            if a is None or b is None:
                return True
            return (a == b) == (fn == "CheckSameValue")
        col = check.get("ColumnName")
        if col is not None:
            self.need(col)
        v = row.get(col) if col else None
        if fn in ("TypeString", "FormatString") and v is not None:
            return fn == "TypeString" or v.isascii()
        if fn in ("TypeDecimal", "FormatNumeric", "CheckDecimalValue"):
            return v is None or exact(v) is not None
        if fn in ("TypeDateTime", "FormatDateTime"):
            return v is None or is_datetime(v)
        if fn == "FormatUnit":
            return v is None or UNIT.match(v) is not None
        if fn == "FormatKeyValue":
            return v is None or key_value(v)
        if fn == "FormatCurrency":
            return v is None or re.match(r"^[A-Z]{3}$", v) is not None
        if fn == "CheckNationalCurrency":
            return v is None or v in self.currencies
        if fn == "CheckGreaterOrEqualThanValue":
            return v is None or (exact(v) is not None and exact(v) >= decimal.Decimal(str(check["Value"])))
        if fn == "ColumnByColumnEqualsColumnValue":
            names = (check["ColumnAName"], check["ColumnBName"], check["ResultColumnName"])
            for n in names:
                self.need(n)
            a, b, r = (row.get(n) for n in names)
            if None in (a, b, r):
                return True
            return None not in (exact(a), exact(b), exact(r)) and exact(a) * exact(b) == exact(r)
        if v is None and fn in ("TypeString", "FormatString"):
            return True
        raise Skip("check function %s is not implemented" % fn)

    def distinct_count(self, check):
        groups = {}
        for row in self.scope:
            groups.setdefault(row.get(check["ColumnAName"]), set()).add(row.get(check["ColumnBName"]))
        return all(len(b - {None}) == int(check["ExpectedCount"]) for b in groups.values())

    # --- rules ---
    def conditions(self, rid, seen=()):
        """The rule's own Condition and those of the composites that name it."""
        own = self.rules[rid]["ValidationCriteria"]["Condition"]
        out = [own] if own else []
        for p in self.parents.get(rid, []):
            if p not in seen:
                out += self.conditions(p, seen + (rid,))
        return out

    def rule_holds(self, rid):
        status, reason = self.evaluate(rid)
        if status == "skip":
            raise Skip("%s is skipped" % rid)
        return status == "pass"

    def unclaimed(self, rid, seen=()):
        """Why the rule, or every composite that names it, needs criteria not claimed; or None."""
        missing = sorted(set(self.rules[rid]["ApplicabilityCriteria"]) - CLAIMED)
        if missing:
            return "needs %s, not claimed" % ", ".join(missing)
        parents = [p for p in self.parents.get(rid, []) if p not in seen]
        whys = [self.unclaimed(p, seen + (rid,)) for p in parents]
        if parents and all(whys):
            return "part of %s, which %s" % (parents[0], whys[0])
        return None

    def not_applicable(self, rid, seen=()):
        """Why the rule does not apply to this dataset, or None."""
        why = self.unclaimed(rid)
        if why:
            return why
        r = self.rules[rid]
        req = r["ValidationCriteria"]["Requirement"]
        if r["Function"] == "Presence" and req.get("CheckFunction") == "ColumnPresent" and \
                r["ValidationCriteria"]["Keyword"] in ("MAY", "OPTIONAL") and req["ColumnName"] not in self.data.columns:
            return "optional column %s is absent" % req["ColumnName"]
        # A composite's items are not its preconditions: an item that does not apply is skipped alone.
        items = {i.get("ModelRuleId") for i in req.get("Items", [])}
        for d in r["ValidationCriteria"]["Dependencies"]:
            if d in self.rules and d not in seen and d not in items:
                why = self.not_applicable(d, seen + (rid,))
                if why:
                    return "depends on %s, which %s" % (d, why if why.startswith(("needs", "part", "depends")) else "is skipped: " + why)
        return None

    def evaluate(self, rid):
        if rid not in self.results:
            self.results[rid] = ("skip", "in a dependency cycle")
            saved = getattr(self, "scope", [])
            try:
                self.results[rid] = self.run(rid)
            except Skip as s:
                self.results[rid] = ("skip", str(s))
            except AssertionError as a:
                self.results[rid] = ("fail", str(a))
            self.scope = saved
        return self.results[rid]

    def run(self, rid):
        r = self.rules[rid]
        vc = r["ValidationCriteria"]
        if r["Status"] != "Active":
            raise Skip("status %s" % r["Status"])
        why = self.not_applicable(rid)
        if why:
            raise Skip(why)
        req = OWN_CHECKS.get(rid, vc["Requirement"])
        if r["Type"] == "Dynamic" and rid not in OWN_CHECKS:
            raise Skip("Dynamic: no static check in the model")
        if vc["Keyword"] in ("MAY", "OPTIONAL"):
            raise Skip("MAY: nothing to enforce")
        if not req:
            raise Skip("no requirement in the model")
        conds = self.conditions(rid)
        scope = [i for i, row in enumerate(self.data.rows) if all(self.holds(c, row) for c in conds)]
        self.scope = [self.data.rows[i] for i in scope]
        if r["Function"] == "Composite":
            return self.composite(req)
        bad = [i for i in scope if not self.holds(req, self.data.rows[i])]
        if not self.holds(req, None):
            return ("fail", "fails on the dataset")
        alternatives = self.or_parents(rid)
        if bad and alternatives:
            raise Skip("an alternative of %s, which decides (this one does not hold)" % alternatives[0])
        if bad:
            return ("fail", "%d row(s), first data row %d: %s" % (len(bad), bad[0] + 1, vc["MustSatisfy"]))
        return ("pass", "")

    def or_parents(self, rid):
        """The OR composites of which the rule is one alternative ("X is null when ... or not null when ...").
        An alternative's own "when" is in its text only, so it is judged by the OR."""
        ps = self.parents.get(rid, [])
        return ps if ps and all(self.rules[p]["ValidationCriteria"]["Requirement"].get("CheckFunction") == "OR"
                                for p in ps) else []

    def composite(self, req):
        """AND/OR of rules: a skipped item neither passes nor fails it."""
        got = []
        for item in req.get("Items", []):
            if item.get("CheckFunction") == "CheckModelRule":
                status, _ = self.evaluate(item["ModelRuleId"])
                got.append((status, item["ModelRuleId"]))
            else:
                ok = all(self.holds(item, row) for row in self.scope) and self.holds(item, None)
                got.append(("pass" if ok else "fail", item.get("CheckFunction")))
        ran = [g for g in got if g[0] != "skip"]
        failed = [n for s, n in ran if s == "fail"]
        if req["CheckFunction"] == "OR":
            if any(s == "pass" for s, _ in ran):
                return ("pass", "")
            if len(ran) < len(got):
                raise Skip("no item passed and some were skipped")
            return ("fail", "no item holds: " + ", ".join(failed))
        if failed:
            return ("fail", "items fail: " + ", ".join(failed))
        if not ran:
            raise Skip("every item is skipped")
        return ("pass", "")


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    model = json.load(open(argv[1], encoding="utf-8"))
    currencies = set(open(argv[2], encoding="utf-8").read().split())
    failures = 0
    for path in argv[3:]:
        data = Dataset(path)
        ev = Evaluator(model, currencies, data)
        for rid in sorted(ev.rules):
            ev.evaluate(rid)
        counts = {s: sum(1 for x, _ in ev.results.values() if x == s) for s in ("pass", "fail", "skip")}
        print("%s: %d rows; %d rules: ran %d, passed %d, failed %d, skipped %d" % (
            path, len(data.rows), len(ev.rules), counts["pass"] + counts["fail"], counts["pass"], counts["fail"],
            counts["skip"]))
        for rid, (status, reason) in sorted(ev.results.items()):
            if status != "pass":
                print("  %s %s: %s" % (status.upper(), rid, reason))
        failures += counts["fail"]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
