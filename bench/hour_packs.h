#pragma once
// --pack: the shipped windows packed as `gpuledger fleet-db pack` packs them
// (one row a GPU-hour, schema 17), then the sizes again. A window row is
// 1.3-1.8 KB and PostgreSQL compresses no value of a row under ~2 KB (its
// TOAST threshold, whatever toast_tuple_target says), so a body in a row is
// never compressed; an hour's 60 windows in one value are.
#include <cstdint>

#include "fleet/pg_connection.h"

namespace gpuledger::bench {

// Packs every verified GPU-hour before `before`, rewrites the windows, the
// packs and the windows' parts (VACUUM FULL: the bytes they hold, not the
// free space the moved rows left, which new rows reuse) and says how long
// packing took.
void pack_shipped_windows(fleet::PgConnection& db, int64_t before);

}  // namespace gpuledger::bench
