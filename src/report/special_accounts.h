#pragma once
// The ledger's special accounts (__unallocated__, __idle__, __overflow__, any
// other "__name__"), named in every view for what the code puts there.
#include <string>

namespace gpuledger::report {

// What the account holds, in words; empty for an account that is a workload.
std::string special_account_meaning(const std::string& account);

}  // namespace gpuledger::report
