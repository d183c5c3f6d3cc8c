#pragma once
// The ledger's special accounts (__unallocated__, __idle__, __overflow__, any
// other "__name__"), named in every view for what the code puts there.
#include <string>

namespace gpuledger::report {

// Whether the account is one of gpuledger's own ("__name__"), not a workload:
// the one test every report view uses.
bool is_special_account(const std::string& account);

// What the account holds, in words; empty for an account that is a workload.
std::string special_account_meaning(const std::string& account);

}  // namespace gpuledger::report
