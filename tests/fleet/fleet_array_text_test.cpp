// The array text a shipper's batch and a report's statements send
// (fleet_sql.h, append_array_element), against a real PostgreSQL server
// (pg_server.h): every element comes back from the server's own parse as
// it was sent, whatever bytes a tenant put in a name or a body.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet/fleet_sql.h"
#include "fleet_db_fixture.h"

namespace gpuledger::testing {
namespace {

TEST_F(FleetDb, AnArrayElementComesBackFromTheServerAsItWasWrittenWhateverItsBytes) {
  std::string every_byte;
  for (int b = 1; b < 128; ++b) every_byte += static_cast<char>(b);
  const std::vector<std::string> items = {
      "", "NULL", "null", "a,b", "{x}", "\"q\"", "back\\slash\\", "\\\"", " lead and trail ", every_byte,
      "nöde-ä/GPU-ü", std::string(100000, '"'), std::string(50000, '\\') + std::string(50000, 'x'),
      R"({"accounts":[["k8s/pod-a","team \"a\"",1.5]],"charges":[["k8s/pod-a","busy",12]]})"};
  std::string text = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) text += ',';
    fleet::append_array_element(text, items[i]);
  }
  text += '}';
  fleet::PgResult r = admin_->query("SELECT x FROM unnest($1::text[]) WITH ORDINALITY u(x, n) ORDER BY n", {text});
  ASSERT_EQ(r.rows(), static_cast<int>(items.size()));
  for (int i = 0; i < r.rows(); ++i) {
    EXPECT_FALSE(r.null(i, 0)) << i;
    EXPECT_EQ(r.text(i, 0), items[static_cast<size_t>(i)]) << i;
  }
}

}  // namespace
}  // namespace gpuledger::testing
