#pragma once
// The window record's persisted scalar fields, listed once (issue 27): each
// with its column in the store (SQLite), its column in the fleet database's
// windows table, its place in the window JSON (a fleet roll-up's body), and
// its hourly roll-up rule. The store's insert and select, the fleet rows
// (and so their digest) and reader, the JSON and merge_windows() all iterate
// for_each_window_field(); adding a persisted field is one line here, its
// meaning in store.h, and its test (tests/fleet/window_fields_test.cpp: the store, the fleet and the JSON).
//
// The order is the fleet row's (after its key: cluster, node, gpu_uuid,
// start_time), which the window digest covers: never reorder. Fields only
// the store holds (the device data quality) come last. The schema history
// (CREATE TABLE, ALTER TABLE of each migration) stays as it was written, in
// store.cpp and fleet/fleet_schema.cpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "ledger/store.h"

namespace gpuledger::ledger {

// How an hourly roll-up (hourly_rollup.h) merges a field over its windows.
enum class Merge {
  kFirst,      // the first window's (the same in all: the roll-up's group)
  kMin,        // the least
  kMax,        // the greatest
  kSum,        // summed (a map: per key)
  kAll,        // true when true in every window
  kTimeMean,   // weighted by window length, over the merged span
  kKnownMean,  // weighted by window length, over the windows that had a value (KnownMean, efficiency_mean.h)
  kAgreed,     // the windows' common value, else "mixed"
  kEnergy,     // merge_energy(): summed, or weighted by energy
  kLabels,     // an account's labels, all together: the latest non-empty ones
  kEvidence,   // an account's rightsizing evidence: merge_evidence() (window_evidence.h)
};

// Which store table holds the column.
enum class StoreTable { kWindows, kWindowEnergy };

struct WindowField {
  const char* store;            // its column in the store; nullptr: not stored there
  StoreTable table;
  int store_since;              // the store schema that added it
  const char* store_before;     // what a store from before that reads in its place (SQL)
  const char* fleet;            // its column in the fleet windows table; nullptr: a key column, or not shipped
  const char* json_group;       // nullptr, or the key of the JSON array or object that holds it
  const char* json;             // its JSON key (in json_group when set); nullptr: a position in json_group
  int json_at;                  // its position in json_group's array (json nullptr)
  Merge merge;
  int audit;                    // its place in the bill id's hash of a window (report/bill_audit.h); 0: not hashed
};

// A field of an optional part of a record (Whole: a window's energy, an
// account's idle runs; const Whole in a const record): absent with the part,
// which reading its first field makes known.
template <class Whole, class T>
struct Part {
  std::conditional_t<std::is_const_v<Whole>, const std::optional<std::remove_const_t<Whole>>,
                     std::optional<Whole>>& whole;
  T std::remove_const_t<Whole>::*member;
};
// A Part read back: a part that is missing stays missing where its encoding
// has nothing (`absent`: a NULL column, a missing key or array cell); else it
// is made, and `read` fills its member.
template <class W, class T, class Read>
void read_part(Part<W, T>& p, bool absent, Read&& read) {
  if (!p.whole) {
    if (absent) return;
    p.whole.emplace();
  }
  read((*p.whole).*p.member);
}

namespace window_field {
using enum Merge;
using enum StoreTable;
// clang-format off
//                                store         table        since before   fleet                 group     json             at  merge  audit
inline constexpr WindowField kStart        {"start",            kWindows, 1, nullptr, nullptr,            nullptr,  "start",         -1, kMin, 1};
inline constexpr WindowField kGpuUuid      {"gpu_uuid",         kWindows, 1, nullptr, nullptr,            "slot",   nullptr,          0, kFirst, 3};
inline constexpr WindowField kEnd          {"end",              kWindows, 1, nullptr, "end_time",         nullptr,  "end",           -1, kMax, 2};
inline constexpr WindowField kParentUuid   {"parent_uuid",      kWindows, 1, nullptr, "parent_uuid",      "slot",   nullptr,          3, kFirst, 6};
inline constexpr WindowField kModel        {"model",            kWindows, 1, nullptr, "model",            "slot",   nullptr,          1, kFirst, 4};
inline constexpr WindowField kMigProfile   {"mig_profile",      kWindows, 1, nullptr, "mig_profile",      "slot",   nullptr,          2, kFirst, 5};
inline constexpr WindowField kGpuFraction  {"gpu_fraction",     kWindows, 1, nullptr, "gpu_fraction",     nullptr,  "gpu_fraction",  -1, kFirst, 7};
inline constexpr WindowField kCurrency     {"currency",         kWindows, 1, nullptr, "currency",         nullptr,  "currency",      -1, kFirst, 8};
inline constexpr WindowField kCostMicros   {"cost_micros",      kWindows, 1, nullptr, "cost_micros",      "micros", nullptr,          0, kSum, 9};
inline constexpr WindowField kBusyMicros   {"busy_micros",      kWindows, 1, nullptr, "busy_micros",      "micros", nullptr,          1, kSum, 10};
inline constexpr WindowField kIdleMicros   {"idle_micros",      kWindows, 1, nullptr, "idle_micros",      "micros", nullptr,          2, kSum, 11};
inline constexpr WindowField kMemoryMicros {"memory_micros",    kWindows, 3, "0",     "memory_micros",    "micros", nullptr,          3, kSum, 12};
inline constexpr WindowField kCostPolicy   {"cost_policy",      kWindows, 3, "'usage'", "cost_policy",    nullptr,  "cost_policy",   -1, kAgreed, 13};
// A schema 2 store was billed on the held shares: allocated = held.
inline constexpr WindowField kAllocatedTotal{"allocated_total", kWindows, 3,
    "(SELECT total(held_share) FROM accounts a WHERE a.window_id = windows.id)",
                                                                "allocated_total",  nullptr,  "allocated_total", -1, kTimeMean, 14};
inline constexpr WindowField kBusyFraction {"busy_fraction",    kWindows, 1, nullptr, "busy_fraction",    nullptr,  "busy_fraction", -1, kTimeMean, 15};
inline constexpr WindowField kBusySource   {"busy_source",      kWindows, 1, nullptr, "busy_source",      nullptr,  "busy_source",   -1, kAgreed, 16};
inline constexpr WindowField kExclusive    {"exclusive",        kWindows, 1, nullptr, "exclusive",        nullptr,  "exclusive",     -1, kAll, 17};
inline constexpr WindowField kObserved     {"observed_seconds", kWindows, 1, nullptr, "observed_seconds", nullptr,  "observed_s",    -1, kSum, 18};
inline constexpr WindowField kSource       {"source",           kWindows, 1, nullptr, "source",           nullptr,  "source",        -1, kAgreed, 19};
inline constexpr WindowField kSmActive     {"sm_active",        kWindows, 1, nullptr, "sm_active",        "device", nullptr,          0, kKnownMean, 20};
inline constexpr WindowField kSmOccupancy  {"sm_occupancy",     kWindows, 1, nullptr, "sm_occupancy",     "device", nullptr,          1, kKnownMean, 21};
inline constexpr WindowField kTensorActive {"tensor_active",    kWindows, 1, nullptr, "tensor_active",    "device", nullptr,          2, kKnownMean, 22};
inline constexpr WindowField kDramActive   {"dram_active",      kWindows, 1, nullptr, "dram_active",      "device", nullptr,          3, kKnownMean, 23};
inline constexpr WindowField kEnergyMj     {"millijoules",      kWindowEnergy, 2, nullptr, "energy_millijoules", "energy", "mj",     -1, kEnergy, 24};
inline constexpr WindowField kEnergySource {"source",           kWindowEnergy, 2, nullptr, "energy_source", "energy", "source",     -1, kEnergy, 25};
inline constexpr WindowField kCarbon       {"carbon_g_per_kwh", kWindowEnergy, 2, nullptr, "carbon_g_per_kwh", "energy", "carbon", -1, kEnergy, 26};
inline constexpr WindowField kSplitSource  {"split_source",     kWindows, 7, "''",    "split_source",     nullptr,  "split_source",  -1, kAgreed, 0};
inline constexpr WindowField kDeviceOk     {"device_ok",        kWindows, 9, "0",     nullptr,            nullptr,  nullptr,         -1, kSum, 0};
inline constexpr WindowField kDeviceSuspect{"device_suspect",   kWindows, 9, "0",     nullptr,            nullptr,  nullptr,         -1, kSum, 0};
inline constexpr WindowField kDeviceAbsent {"device_absent",    kWindows, 9, "0",     nullptr,            nullptr,  nullptr,         -1, kSum, 0};
inline constexpr WindowField kFindings     {"device_findings",  kWindows, 9, "''",    nullptr,            nullptr,  nullptr,         -1, kSum, 0};
// clang-format on
// The audit places, 1 to kAudited; the energy's (24 on) are hashed after the window's charges, when it is known.
inline constexpr int kAudited = 26;
}  // namespace window_field

// Calls v(field, value...) for each field above, in order, with the field's
// value in each of the records w (WindowRecord or const WindowRecord): its
// member, or a Part of its energy. Several records: a roll-up reads one into another.
template <class V, class... W>
void for_each_window_field(V&& v, W&... w) {
  namespace f = window_field;
  auto energy = [](auto& r, auto member) {
    using R = std::remove_reference_t<decltype(r)>;
    using T = std::remove_reference_t<decltype(std::declval<WindowEnergyRecord&>().*member)>;
    return Part<std::conditional_t<std::is_const_v<R>, const WindowEnergyRecord, WindowEnergyRecord>, T>{r.energy,
                                                                                                          member};
  };
  v(f::kStart, w.start...);
  v(f::kGpuUuid, w.slot.uuid...);
  v(f::kEnd, w.end...);
  v(f::kParentUuid, w.slot.parent_uuid...);
  v(f::kModel, w.slot.model...);
  v(f::kMigProfile, w.slot.mig_profile...);
  v(f::kGpuFraction, w.gpu_fraction...);
  v(f::kCurrency, w.currency...);
  v(f::kCostMicros, w.cost_micros...);
  v(f::kBusyMicros, w.busy_micros...);
  v(f::kIdleMicros, w.idle_micros...);
  v(f::kMemoryMicros, w.memory_micros...);
  v(f::kCostPolicy, w.cost_policy...);
  v(f::kAllocatedTotal, w.allocated_total...);
  v(f::kBusyFraction, w.busy_fraction...);
  v(f::kBusySource, w.busy_source...);
  v(f::kExclusive, w.exclusive...);
  v(f::kObserved, w.observed_seconds...);
  v(f::kSource, w.source...);
  v(f::kSmActive, w.device.sm_active...);
  v(f::kSmOccupancy, w.device.sm_occupancy...);
  v(f::kTensorActive, w.device.tensor_active...);
  v(f::kDramActive, w.device.dram_active...);
  v(f::kEnergyMj, energy(w, &WindowEnergyRecord::millijoules)...);
  v(f::kEnergySource, energy(w, &WindowEnergyRecord::source)...);
  v(f::kCarbon, energy(w, &WindowEnergyRecord::carbon_g_per_kwh)...);
  v(f::kSplitSource, w.split_source...);
  v(f::kDeviceOk, w.device_quality.ok...);
  v(f::kDeviceSuspect, w.device_quality.suspect...);
  v(f::kDeviceAbsent, w.device_quality.absent...);
  v(f::kFindings, w.device_findings...);
}

// An account's persisted fields (AccountRecord), listed once the same way: its
// column in the store's accounts table, in the fleet accounts table (whose
// order the digest covers: never reorder), its position in the JSON account
// array, its roll-up rule and whether the bill id hashes it (in this order).
struct AccountField {
  const char* store;         // its column in the store's accounts table
  int store_since;           // the store schema that added it
  const char* store_before;  // what a store from before that reads in its place (SQL)
  const char* fleet;         // its column in the fleet accounts table; nullptr: not shipped
  int json_at;               // its position in the JSON account array; -1: not there
  int json_sub;              // its position in the array at json_at; -1: json_at holds it
  Merge merge;               // kFirst: the key; kSum of an optional: unknown where no window knew it
  bool audit;                // hashed in the bill id's window record
};

namespace account_field {
using enum Merge;
// The JSON account array: kJsonFields positions, then the Slurm user and account only when one is not "".
inline constexpr int kJsonFields = 23;
// clang-format off
//                              store                      since before          fleet                       json sub merge audit
inline constexpr AccountField kAccount       {"account",                1, nullptr,     "account",                  0, -1, kFirst, true};
inline constexpr AccountField kNamespace     {"namespace",              1, nullptr,     "namespace",                1, -1, kLabels, true};
inline constexpr AccountField kPod           {"pod",                    1, nullptr,     "pod",                      2, -1, kLabels, true};
inline constexpr AccountField kContainer     {"container",              1, nullptr,     "container",                3, -1, kLabels, true};
inline constexpr AccountField kTeam          {"team",                   1, nullptr,     "team",                     4, -1, kLabels, true};
inline constexpr AccountField kHeld          {"held_share",             1, nullptr,     "held_share",               5, -1, kTimeMean, true};
inline constexpr AccountField kAllocated     {"allocated_share",        3, "held_share", "allocated_share",         6, -1, kTimeMean, true};
inline constexpr AccountField kAllocatedKnown{"allocated_share_known",  5, "1",         "allocated_share_known",    7, -1, kAll, true};
inline constexpr AccountField kBusySeconds   {"busy_seconds",           1, nullptr,     "busy_seconds",             8, -1, kSum, true};
inline constexpr AccountField kActivity      {"activity_share",         1, nullptr,     "activity_share",           9, -1, kTimeMean, true};
inline constexpr AccountField kGpuBusy       {"gpu_busy_seconds",       1, nullptr,     "gpu_busy_seconds",        10, -1, kSum, true};
inline constexpr AccountField kVramBytes     {"vram_byte_seconds",      1, nullptr,     "vram_byte_seconds",       11, -1, kSum, true};
inline constexpr AccountField kLaunches      {"launches",               1, nullptr,     "launches",                12, -1, kSum, true};
inline constexpr AccountField kSmActive      {"sm_active",              1, nullptr,     "sm_active",               13,  0, kKnownMean, true};
inline constexpr AccountField kSmOccupancy   {"sm_occupancy",           1, nullptr,     "sm_occupancy",            13,  1, kKnownMean, true};
inline constexpr AccountField kTensorActive  {"tensor_active",          1, nullptr,     "tensor_active",           13,  2, kKnownMean, true};
inline constexpr AccountField kDramActive    {"dram_active",            1, nullptr,     "dram_active",             13,  3, kKnownMean, true};
inline constexpr AccountField kVramPeak      {"vram_peak_bytes",        6, "NULL",      "vram_peak_bytes",         14, -1, kEvidence, false};
inline constexpr AccountField kVramP95       {"vram_p95_bytes",         6, "NULL",      "vram_p95_bytes",          15, -1, kEvidence, false};
inline constexpr AccountField kNvmlVramPeak  {"nvml_vram_peak_bytes",   6, "NULL",      "nvml_vram_peak_bytes",    16, -1, kEvidence, false};
inline constexpr AccountField kNvmlVramP95   {"nvml_vram_p95_bytes",    6, "NULL",      "nvml_vram_p95_bytes",     17, -1, kEvidence, false};
inline constexpr AccountField kSmActiveP95   {"sm_active_p95",          6, "NULL",      "sm_active_p95",           18, -1, kEvidence, false};
inline constexpr AccountField kSmOccupancyP95{"sm_occupancy_p95",       6, "NULL",      "sm_occupancy_p95",        19, -1, kEvidence, false};
inline constexpr AccountField kBusyP95       {"busy_p95",               6, "NULL",      "busy_p95",                20, -1, kEvidence, false};
inline constexpr AccountField kIdleLead      {"idle_lead_seconds",      6, "NULL",      "idle_lead_seconds",       22,  0, kEvidence, false};
inline constexpr AccountField kIdleTrail     {"idle_trail_seconds",     6, "NULL",      "idle_trail_seconds",      22,  1, kEvidence, false};
inline constexpr AccountField kIdleLongest   {"idle_longest_seconds",   6, "NULL",      "idle_longest_seconds",    22,  2, kEvidence, false};
inline constexpr AccountField kWindows       {"window_count",           6, "NULL",      "window_count",            21, -1, kEvidence, false};
inline constexpr AccountField kSlurmUser     {"slurm_user",            10, "''",        "slurm_user",              23, -1, kLabels, false};
inline constexpr AccountField kSlurmAccount  {"slurm_account",         10, "''",        "slurm_account",           24, -1, kLabels, false};
inline constexpr AccountField kUsedUnallocated{"used_unallocated_seconds", 9, "NULL",   nullptr,                   -1, -1, kSum, false};
inline constexpr AccountField kAllocatedUnused{"allocated_unused_seconds", 9, "NULL",   nullptr,                   -1, -1, kSum, false};
// clang-format on
}  // namespace account_field

// Calls v(field, value...) for each account field above, in order, with its
// value in each of the records a (AccountRecord or const AccountRecord): its
// member, or a Part of its idle runs.
template <class V, class... A>
void for_each_account_field(V&& v, A&... a) {
  namespace f = account_field;
  auto idle = [](auto& r, double IdleRun::*member) {
    using R = std::remove_reference_t<decltype(r)>;
    return Part<std::conditional_t<std::is_const_v<R>, const IdleRun, IdleRun>, double>{r.evidence.idle, member};
  };
  v(f::kAccount, a.account...);
  v(f::kNamespace, a.labels.namespace_name...);
  v(f::kPod, a.labels.pod...);
  v(f::kContainer, a.labels.container...);
  v(f::kTeam, a.labels.team...);
  v(f::kHeld, a.held_share...);
  v(f::kAllocated, a.allocated_share...);
  v(f::kAllocatedKnown, a.allocated_share_known...);
  v(f::kBusySeconds, a.busy_seconds...);
  v(f::kActivity, a.activity_share...);
  v(f::kGpuBusy, a.gpu_busy_seconds...);
  v(f::kVramBytes, a.vram_byte_seconds...);
  v(f::kLaunches, a.launches...);
  v(f::kSmActive, a.efficiency.sm_active...);
  v(f::kSmOccupancy, a.efficiency.sm_occupancy...);
  v(f::kTensorActive, a.efficiency.tensor_active...);
  v(f::kDramActive, a.efficiency.dram_active...);
  v(f::kVramPeak, a.evidence.vram_peak_bytes...);
  v(f::kVramP95, a.evidence.vram_p95_bytes...);
  v(f::kNvmlVramPeak, a.evidence.nvml_vram_peak_bytes...);
  v(f::kNvmlVramP95, a.evidence.nvml_vram_p95_bytes...);
  v(f::kSmActiveP95, a.evidence.sm_active_p95...);
  v(f::kSmOccupancyP95, a.evidence.sm_occupancy_p95...);
  v(f::kBusyP95, a.evidence.busy_p95...);
  v(f::kIdleLead, idle(a, &IdleRun::lead)...);
  v(f::kIdleTrail, idle(a, &IdleRun::trail)...);
  v(f::kIdleLongest, idle(a, &IdleRun::longest)...);
  v(f::kWindows, a.evidence.windows...);
  v(f::kSlurmUser, a.labels.slurm_user...);
  v(f::kSlurmAccount, a.labels.slurm_account...);
  v(f::kUsedUnallocated, a.used_unallocated_seconds...);
  v(f::kAllocatedUnused, a.allocated_unused_seconds...);
}

// The fields of a window or of an account (R: either, const or not), as above.
template <class V, class R>
void for_each_field(V&& v, R& record) {
  if constexpr (std::is_same_v<std::remove_const_t<R>, WindowRecord>)
    for_each_window_field(v, record);
  else
    for_each_account_field(v, record);
}

template <class T>
inline constexpr bool kIsPart = false;
template <class Whole, class T>
inline constexpr bool kIsPart<Part<Whole, T>> = true;

}  // namespace gpuledger::ledger
