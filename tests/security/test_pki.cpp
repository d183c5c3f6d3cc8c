#include "test_pki.h"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace gpuledger::testing {

TestPki::TestPki(const std::string& tag)
    : dir_(std::filesystem::temp_directory_path() / ("gl_pki_" + tag + "_" + std::to_string(::getpid()))) {
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string script =
      "set -e\ncd " + dir_.string() + "\n" +
      "openssl req -x509 " + key + " -keyout ca.key -out ca.crt -days 2 -subj /CN=gpuledger-test-ca\n" +
      "openssl req -x509 " + key + " -keyout rogue-ca.key -out rogue-ca.crt -days 2 -subj /CN=rogue-ca\n" +
      "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > server.ext\n" +
      "printf 'extendedKeyUsage=clientAuth\\n' > client.ext\n" +
      "issue() { openssl req " + key + " -keyout $1.key -out $1.csr -subj /CN=$1; " +
      "openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial -out $1.crt -days 2 -extfile $3; }\n" +
      "issue server ca server.ext\nissue client ca client.ext\nissue rogue rogue-ca client.ext\n";
  const auto script_file = dir_ / "make-pki.sh";
  if (FILE* f = std::fopen(script_file.c_str(), "w")) {
    std::fputs(script.c_str(), f);
    std::fclose(f);
  }
  auto r = run("sh " + script_file.string());
  if (r.status != 0) throw std::runtime_error("openssl: " + r.out);
}

TestPki::~TestPki() { std::filesystem::remove_all(dir_); }

}  // namespace gpuledger::testing
