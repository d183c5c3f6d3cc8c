#pragma once
// The bytes a node's bodies and other values may take in the fleet database
// (schema 15: fleet_migration_15.cpp holds the same numbers) and the bytes of
// a body a report's page carries. Bodies are what a node writes freely (its accounts'
// names and how many there are); unbounded, one hostile node's single insert
// had the server parse up to 1 GB into one backend, and every fleet report
// then held pages of 5,000 such rows.
#include <cstddef>

namespace gpuledger::fleet {

// A window's body (window_children_to_json): about 540 accounts with the
// longest names Kubernetes allows (1.9 KB each), some 2,000 with names of a
// few dozen characters. The agent does not ship a larger one (kept in its
// store, counted as too_large) rather than have its batch refused.
inline constexpr size_t kMaxWindowBodyBytes = size_t{1} << 20;
// A roll-up's body (window_to_json): a larger one is not shipped, and reports
// read its finer periods.
inline constexpr size_t kMaxRollupBodyBytes = size_t{16} << 20;
// Any other value of a window's or a roll-up's row (names, sources, a
// model, a digest: NVML's longest name or UUID is 96 bytes); a window with a
// larger one is not shipped, as one whose body is too large.
inline constexpr size_t kMaxFieldBytes = 256;
// The largest body a report fetches in a page of rows; a larger one (never
// an agent's usual window: a few KiB) comes apart from its page (a window's
// from the views, kViewsBodyBytes a statement; a roll-up's finer periods
// instead), so that a page of 5,000 rows is at most ~320 MB whatever the
// nodes wrote.
inline constexpr size_t kPageBodyBytes = size_t{64} << 10;
// The bodies one statement asks the views for (at least one body, however large).
inline constexpr size_t kViewsBodyBytes = size_t{8} << 20;

}  // namespace gpuledger::fleet
