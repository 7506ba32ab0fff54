// Shared helpers of the benchmark programs: wall-clock timing, percentiles, a scratch directory,
// realistic message text, and the one-line summary a script reads (`BENCH name=... key=value`).
// Benchmarks measure; they never assert. A missed target is printed as `pass=0`, not hidden.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

namespace superagent::bench {

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The q-quantile (0..1) of `v` by nearest rank; 0 for an empty sample.
inline double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// A fresh directory under $TMPDIR (or /tmp) removed when the object goes away.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) {
    path_ = std::filesystem::temp_directory_path() / ("superagent-bench-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    if (std::getenv("BENCH_KEEP")) return;  // keep logs and stores for a look afterwards
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Production logs at info to stderr (journald). Benchmarks keep that cost but write the lines to
// a file so the terminal shows figures only.
inline void LogToFile(const std::string& path) {
  auto logger = spdlog::basic_logger_mt("bench", path, true);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
}

// Words of ordinary engineering chat, for message bodies of realistic length.
inline std::string Words(std::mt19937_64& rng, std::size_t chars) {
  static const char* kWords[] = {"the", "build", "fails", "on", "main", "since", "yesterday", "could", "you",
                                 "please", "look", "at", "README", "typo", "in", "heading", "test", "flaky",
                                 "timeout", "when", "parsing", "config", "file", "I", "think", "we", "should",
                                 "refactor", "this", "function", "error", "handling", "is", "missing", "here",
                                 "see", "log", "line", "42", "thanks", "for", "review", "LGTM", "nit:", "rename"};
  std::string s;
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kWords / sizeof kWords[0] - 1);
  while (s.size() < chars) {
    if (!s.empty()) s += ' ';
    s += kWords[pick(rng)];
  }
  return s;
}

// Message length as seen in GitHub comments and chat: mostly short, a long tail (log-normal,
// median ~250 characters, cut at 4 000).
inline std::size_t MessageLength(std::mt19937_64& rng) {
  std::lognormal_distribution<double> d(5.5, 1.0);
  return std::clamp<std::size_t>(static_cast<std::size_t>(d(rng)), 8, 4000);
}

// Key/value pairs of the final summary line.
class Summary {
 public:
  explicit Summary(std::string name) : name_(std::move(name)) {}
  template <class T>
  Summary& Add(const std::string& key, const T& value) {
    std::ostringstream s;
    s.precision(4);
    s << std::fixed << value;
    std::string v = s.str();
    if constexpr (std::is_floating_point_v<T>) {
      while (v.size() > 1 && v.back() == '0') v.pop_back();
      if (!v.empty() && v.back() == '.') v.pop_back();
    }
    fields_.emplace_back(key, v);
    return *this;
  }
  void Print() const {
    std::string line = "BENCH name=" + name_;
    for (const auto& [k, v] : fields_) line += " " + k + "=" + v;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  std::string name_;
  std::vector<std::pair<std::string, std::string>> fields_;
};

// `--name value` from argv, or `fallback`.
inline long Arg(int argc, char** argv, const std::string& name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return std::atol(argv[i + 1]);
  return fallback;
}

}  // namespace superagent::bench
