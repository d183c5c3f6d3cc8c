#pragma once
// Fleet schema migrations kept in files of their own (fleet_schema.cpp holds
// the list and the earlier ones): migration 7, one row a window; 8, the
// server's work a window made cheaper; 9, a window's body parsed once; 10,
// the server's plans made once a session; 11, the totals a merge reads
// from an index alone; 12, a month's roll-ups partitioned by period; 13, a
// day's chart in one row a GPU; 14, a statement's bodies parsed in one pass;
// 15, an agent's bodies bounded in bytes; 16, a node's day in one chart row;
// 17, an hour's windows packed in one row; 18, a role that may pack and
// nothing else; 19, a roll-up's sums from its finer roll-ups' bodies.
namespace gpuledger::fleet {

extern const char* const kMigration7;
extern const char* const kMigration8;
extern const char* const kMigration9;
extern const char* const kMigration10;
extern const char* const kMigration11;
extern const char* const kMigration12;
extern const char* const kMigration13;
extern const char* const kMigration14;
extern const char* const kMigration15;
extern const char* const kMigration16;
extern const char* const kMigration17;
extern const char* const kMigration18;
extern const char* const kMigration19;

}  // namespace gpuledger::fleet
