// ModuleOptionsFor: the key table's destinations applied, row by row.
#include "app/config_options.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <variant>
#include <vector>

#include "app/config_internal.h"

namespace superagent::app {

namespace {

using config_internal::BoolOf;
using config_internal::IntOf;
using config_internal::ListOf;
using config_internal::StringOf;
using config_internal::Type;
using Convert = ConfigKey::Convert;

// A value on its way to an option: integers (seconds, milliseconds, ids) travel as long long.
using Converted = std::variant<std::string, bool, long long, double, std::vector<std::string>>;

// `k`'s value in `c` as destination `d` takes it.
Converted ValueFor(const ConfigKey& k, const ConfigKey::Destination& d, Config& c) {
  switch (d.convert) {
    case Convert::kSame: break;
    case Convert::kMilliseconds: return IntOf(k, c) * 1000LL;
    case Convert::kSecret: return ResolveSecret(StringOf(k, c));
    case Convert::kDecimal: {
      // Validated by the row (IsEmptyOrPrice): digits with at most one point.
      const std::string& s = StringOf(k, c);
      return s.empty() ? 0.0 : std::strtod(s.c_str(), nullptr);
    }
    case Convert::kInteger: {
      // The row allows "" or at most 18 digits, so it fits; anything else (a Config set by hand,
      // not parsed) reads as 0, "none", rather than throwing from every wiring function.
      const std::string& s = StringOf(k, c);
      long long n = 0;
      if (std::from_chars(s.data(), s.data() + s.size(), n).ec != std::errc()) n = 0;
      return n;
    }
  }
  switch (k.type) {
    case Type::kString:
    case Type::kEnvName: return StringOf(k, c);
    case Type::kInt: return static_cast<long long>(IntOf(k, c));
    case Type::kBool:
    case Type::kOnOff: return BoolOf(k, c);
    case Type::kEnvNameList:
    case Type::kStringList: return ListOf(k, c);
  }
  return std::string();
}

// Writes `value` where `d` points in *out. A row whose conversion does not give its option's type
// is a mistake in the table, said at once (the table's tests apply every row) rather than left
// unset.
void Store(const ConfigKey& k, const ConfigKey::Destination& d, const Converted& value, ModuleOptions* out) {
  bool stored = false;
  std::visit(
      [&](auto to) {
        auto& option = to(*out);
        using T = std::remove_reference_t<decltype(option)>;
        if constexpr (std::is_same_v<T, int> || std::is_same_v<T, long> || std::is_same_v<T, long long>) {
          if (const long long* v = std::get_if<long long>(&value)) {
            option = static_cast<T>(*v);
            stored = true;
          }
        } else if (const T* v = std::get_if<T>(&value)) {
          option = *v;
          stored = true;
        }
      },
      d.to);
  if (!stored) throw std::logic_error("config key " + std::string(k.name) + ": its destination takes another type");
}

}  // namespace

const CodingCliOptions* ModuleOptions::ChosenCli(std::string_view executor) const {
  if (executor == "claude-code") return &claude_code;
  if (executor == "codex") return &codex;
  if (executor == "gemini-cli") return &gemini_cli;
  if (executor == "qwen-code") return &qwen_code;
  return nullptr;
}

ModuleOptions ModuleOptionsFor(const Config& config) {
  Config c = config;  // the table's accessors take a Config they may write; this only reads
  ModuleOptions out;
  for (const ConfigKey& k : ConfigKeys())
    for (const ConfigKey::Destination& d : k.destinations) Store(k, d, ValueFor(k, d, c), &out);
  return out;
}

}  // namespace superagent::app
