#include "cli/report_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <iostream>
#include <string_view>

#include "common/error.h"
#include "common/unique_fd.h"

namespace gpuledger::cli {

namespace {

bool same_file(const struct stat& a, const std::string& path) {
  struct stat b{};
  return ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The target as it stands: refused when it is a database or the store's.
void refuse_precious(const std::string& path, const std::string& store_path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return;  // not there yet
  const std::string what = "--output " + path + ": ";
  if (S_ISDIR(st.st_mode)) throw Error(what + "is a directory; name a file");
  if (!store_path.empty())
    for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock"})
      if (same_file(st, store_path + suffix))
        throw Error(what + "is the ledger store being read (or one of its files); refusing to write over it");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return;  // unreadable: the write below says why
  unsigned char head[16] = {};
  const ssize_t n = ::read(fd.get(), head, sizeof head);
  if (n == 16 && std::memcmp(head, "SQLite format 3\0", 16) == 0)
    throw Error(what + "is a SQLite database; refusing to write over it");
  // A write-ahead log: magic 0x377f0682 or 0x377f0683, big-endian.
  if (n >= 4 && head[0] == 0x37 && head[1] == 0x7f && head[2] == 0x06 && (head[3] == 0x82 || head[3] == 0x83))
    throw Error(what + "is a SQLite write-ahead log; refusing to write over it");
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void write_output(const std::string& path, const std::string& text, const std::string& store_path) {
  write_output(path, store_path, [&text](const OutputSink& sink) { sink(text); });
}

namespace {

void write_all(int fd, std::string_view text, const std::function<void(const std::string&)>& fail) {
  for (size_t off = 0; off < text.size();) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(std::strerror(errno));
    off += static_cast<size_t>(n);
  }
}

}  // namespace

void write_output(const std::string& path, const std::string& store_path,
                  const std::function<void(const OutputSink&)>& produce) {
  if (path.empty()) {
    produce([](std::string_view text) {
      std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
      if (!std::cout) throw Error("cannot write to stdout");
    });
    std::cout << std::flush;
    if (!std::cout) throw Error("cannot write to stdout");
    return;
  }
  refuse_precious(path, store_path);
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A pipe, a terminal or /dev/stdout: written as a stream, nothing to rename over.
    UniqueFd out(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
    if (!out.valid()) throw Error("--output " + path + ": cannot open (" + std::strerror(errno) + ")");
    produce([&](std::string_view text) {
      write_all(out.get(), text, [&](const std::string& why) { throw Error("--output " + path + ": cannot write (" + why + ")"); });
    });
    return;
  }
  std::string tmp = folder_of(path) + "/.gpuledger-output-XXXXXX";
  UniqueFd fd(::mkstemp(tmp.data()));
  if (!fd.valid()) throw Error("--output " + path + ": cannot write in " + folder_of(path) + " (" + std::strerror(errno) + ")");
  auto fail = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    throw Error("--output " + path + ": cannot write (" + why + "); the file is as it was");
  };
  try {
    produce([&](std::string_view text) { write_all(fd.get(), text, fail); });
  } catch (...) {
    ::unlink(tmp.c_str());  // a report that failed half-way leaves the target as it was
    throw;
  }
  if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0) fail(std::strerror(errno));
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail(std::strerror(errno));
}

}  // namespace gpuledger::cli
