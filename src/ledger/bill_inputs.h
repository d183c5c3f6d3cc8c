#pragma once
// What a bill was made with, kept in the store beside its windows (meta keys
// under "bill/"), so that a report read anywhere can name it: the node and
// cluster the agent ran on, and every price list (with its policies) it
// billed with, each from the time it took effect. The agent records them when
// it opens the store; a price list is written again only when it changes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger/prices.h"

namespace gpuledger::ledger {

class Store;

struct BillInputs {
  std::string node, cluster;  // empty: not recorded (a store from an older agent, or not told)
  struct PriceList {
    int64_t since = 0;  // Unix seconds it took effect
    std::string json;   // canonical JSON: prices and policies (price_book_json)
  };
  std::vector<PriceList> price_lists;  // in effect during the range asked for, oldest first
};

// The price book as canonical JSON: currency, prices (exact decimals), the
// cost, idle and memory policies, window length and MIG slices.
std::string price_book_json(const PriceBook& book);
// Its prices back (currency, rates, MIG slices): what a bill needs to name the
// configured rate of a slot. nullopt when the text is not such JSON.
std::optional<PriceBook> price_book_from_json(const std::string& json);

// Records the node and cluster (when not empty) and the price book if it
// differs from the latest recorded. Throws Error when the store cannot be written.
void record_bill_inputs(Store& store, const std::string& node, const std::string& cluster, const PriceBook& book,
                        int64_t now);

// The node, cluster and the price lists in effect in [from, to): the latest
// taking effect at or before `from`, and every one after it before `to`.
BillInputs read_bill_inputs(const Store& store, int64_t from, int64_t to);

}  // namespace gpuledger::ledger
