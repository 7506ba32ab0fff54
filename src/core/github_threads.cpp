#include "superagent/github_threads.h"

#include "superagent/text.h"

namespace superagent::github_threads {

namespace {

bool IsNamePart(std::string_view s) {
  // "." and ".." are no one's names, and would be paths wherever a name becomes one (mirrors).
  if (s.empty() || s.size() > 100 || s == "." || s == "..") return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool IsRepositoryName(std::string_view repo) {
  const std::size_t slash = repo.find('/');
  if (slash == std::string_view::npos) return false;
  return IsNamePart(repo.substr(0, slash)) && IsNamePart(repo.substr(slash + 1));
}

std::string Canonical(std::string_view repo) { return text::AsciiLower(std::string(repo)); }

std::string Repository(std::string_view repo) { return "github:" + Canonical(repo); }

std::string Key(std::string_view repo, std::string_view rest) { return Repository(repo) + ":" + std::string(rest); }

std::string Issue(std::string_view repo, std::int64_t number) { return Key(repo, "issue:" + std::to_string(number)); }

std::string Pull(std::string_view repo, std::int64_t number) { return Key(repo, "pull:" + std::to_string(number)); }

std::string Ci(std::string_view repo, std::string_view branch) { return Key(repo, "ci:" + std::string(branch)); }

std::string Commit(std::string_view repo, std::string_view sha) { return Key(repo, "commit:" + std::string(sha)); }

std::optional<Place> PlaceOf(std::string_view key) {
  if (key.substr(0, 7) != "github:") return std::nullopt;
  std::string_view rest = key.substr(7);
  const std::size_t colon = rest.find(':');
  const std::string_view repo = rest.substr(0, colon);
  if (!IsRepositoryName(repo)) return std::nullopt;
  Place p;
  p.repo = Canonical(repo);
  if (colon != std::string_view::npos) {
    p.rest = std::string(rest.substr(colon + 1));
    if (p.rest.empty()) return std::nullopt;  // "github:acme/api:" names nothing
  }
  return p;
}

std::string HomeRepository(std::string_view thread, std::string_view fallback) {
  if (auto place = PlaceOf(thread)) return place->repo;
  return fallback.empty() ? std::string() : Canonical(fallback);
}

}  // namespace superagent::github_threads
