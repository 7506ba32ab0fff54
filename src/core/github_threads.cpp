#include "superagent/github_threads.h"

#include "superagent/text.h"

#include <algorithm>

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

std::vector<std::string> RepositoriesNamed(std::string_view text, std::size_t limit) {
  auto name_char = [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' || c == '_' || c == '.';
  };
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size() && out.size() < limit) {
    if (!name_char(text[i])) {
      ++i;
      continue;
    }
    // A run of name characters and slashes: one word of the text.
    std::size_t end = i;
    while (end < text.size() && (name_char(text[end]) || text[end] == '/')) ++end;
    std::string_view word = text.substr(i, end - i);
    const bool after_slash = i > 0 && text[i - 1] == '/';
    i = end;
    // "github.com/acme/web/pull/3": the two parts after the host; otherwise the word is exactly
    // "owner/name", or that followed by GitHub's "/pull/N", "/issues/N", "/tree/…".
    const std::string lower = text::AsciiLower(std::string(word));
    std::string_view rest = word;
    bool from_address = false;
    for (std::string_view host : {"github.com/", "www.github.com/"})
      if (lower.rfind(host, 0) == 0) {
        rest = word.substr(host.size());
        from_address = true;
        break;
      }
    if (after_slash && !from_address) continue;  // a path's tail, "https://example.com/a/b"
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) continue;
    const std::size_t second = rest.find('/', slash + 1);
    std::string_view repo = rest.substr(0, second);
    if (second != std::string_view::npos && !from_address) {
      const std::string_view tail = rest.substr(second + 1);
      const std::size_t kind_end = tail.find('/');
      const std::string_view kind = tail.substr(0, kind_end);
      if (kind != "pull" && kind != "issues" && kind != "tree" && kind != "blob" && kind != "commit") continue;
    }
    while (!repo.empty() && repo.back() == '.') repo.remove_suffix(1);
    if (!IsRepositoryName(repo)) continue;
    std::string canonical = Canonical(repo);
    if (std::find(out.begin(), out.end(), canonical) == out.end()) out.push_back(std::move(canonical));
  }
  return out;
}

}  // namespace superagent::github_threads
