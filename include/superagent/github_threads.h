// GitHub Thread keys and channels, qualified by repository (issue 37): the daemon serves many
// repositories, and issue #1 of one is not issue #1 of another. The one grammar, used by the
// Source that makes keys, the Engine that subscribes a Ticket to its pull requests, the Channel
// that delivers to them and `explain` that names them:
//   github:<owner>/<name>                      the repository itself (pull requests, merges, check runs)
//   github:<owner>/<name>:issue:<n>            an issue's discussion
//   github:<owner>/<name>:pull:<n>             a pull request's discussion
//   github:<owner>/<name>:pull:<n>:review:<id> a review thread on it
//   github:<owner>/<name>:ci:<branch>          CI on a branch
//   github:<owner>/<name>:commit:<sha>         a commit (where CI results are answered)
// The repository is written in lower case: GitHub's names are case-insensitive, and the same
// repository spelt two ways must be one Thread. Keys written before issue 37 had no repository
// ("github:issue:5"); Engine::QualifyGitHubThreads rewrites them once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace superagent::github_threads {

// True for "owner/name" as GitHub allows them: one '/', neither part empty, only letters,
// digits, '-', '_' and '.' (so never ':' — the key's separator), at most 100 characters each.
bool IsRepositoryName(std::string_view repo);

// The repository as keys carry it: lower case.
std::string Canonical(std::string_view repo);

// "github:<repo>", and the same followed by ":" + `rest` ("issue:5", "ci:main").
std::string Repository(std::string_view repo);
std::string Key(std::string_view repo, std::string_view rest);
std::string Issue(std::string_view repo, std::int64_t number);
std::string Pull(std::string_view repo, std::int64_t number);
std::string Ci(std::string_view repo, std::string_view branch);
std::string Commit(std::string_view repo, std::string_view sha);

// A qualified GitHub key taken apart: repo (canonical) and what follows it ("" for the
// repository itself, else "issue:5", "pull:7:review:9", "ci:main", "commit:abc").
struct Place {
  std::string repo;
  std::string rest;
};
// nullopt for a key that is not a qualified GitHub key (another platform's, or an unqualified
// one written before issue 37).
std::optional<Place> PlaceOf(std::string_view key);

// A Ticket's home repository: the one its Thread is in, or `fallback` (canonical; the first
// repository configured) for a Thread of another platform — a chat, the panel.
std::string HomeRepository(std::string_view thread, std::string_view fallback);

// The repositories `text` names, canonical, each once, in the order they first appear, at most
// `limit`: "owner/name" standing alone (between spaces, punctuation, CJK text or the ends — not
// a path's "src/lib/x"), with "#12" or "/pull/3" after it, or a GitHub address's
// "github.com/owner/name". A trailing '.' ends a sentence, not the name. Candidates only: the
// caller keeps those it serves ("src/main.cpp" has a repository's shape too).
std::vector<std::string> RepositoriesNamed(std::string_view text, std::size_t limit);

}  // namespace superagent::github_threads
