// A turn's commits, from the worker's sandbox to the remote: bundled, checked in verified.git,
// pushed. Apart from the preparing of workspaces: this is where a hostile branch is stopped.
#include "superagent/workspace.h"

#include "exec/workspace_internal.h"
#include "superagent/assign_or_return.h"
#include "superagent/text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace superagent::exec {

namespace fs = std::filesystem;
using workspace_internal::BundleHead;
using workspace_internal::Failed;
using workspace_internal::IncomingRef;
using workspace_internal::ParseRefListing;
using workspace_internal::TicketName;

namespace {
// In verified.git: the commit this install last pushed to `branch` on the remote (Push). Kept by
// branch, not by workspace, so a Ticket prepared again after Remove still knows its own branch.
std::string PushedRef(const std::string& branch) { return "refs/superagent/pushed/" + branch; }

// A 40- or 64-digit lower-case hex object id (SHA-1 or SHA-256), as git prints them.
bool IsObjectId(const std::string& id) {
  if (id.size() != 40 && id.size() != 64) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}
}  // namespace

std::string workspace_internal::BundleHead(const std::string& bundle) {
  std::size_t at = bundle.find('\n');
  if (at == std::string::npos) return "";
  const std::string first = bundle.substr(0, at);
  if (first != "# v2 git bundle" && first != "# v3 git bundle") return "";
  for (++at; at < bundle.size() && at < 1'000'000;) {
    const std::size_t end = bundle.find('\n', at);
    if (end == std::string::npos || end == at) return "";  // the header ended without HEAD
    const std::string line = bundle.substr(at, end - at);
    at = end + 1;
    const std::size_t sp = line.find(' ');
    if (sp == std::string::npos || line.substr(sp + 1) != "HEAD") continue;
    const std::string id = line.substr(0, sp);
    return IsObjectId(id) ? id : "";
  }
  return "";
}

std::string workspace_internal::LooseRef(const std::string& repo, const std::string& ref) {
  std::ifstream in(fs::path(repo) / ref, std::ios::binary);
  char buf[72];
  in.read(buf, sizeof buf);
  const std::string text(buf, static_cast<std::size_t>(in.gcount()));
  if (text.empty() || text.back() != '\n') return "";
  const std::string id = text.substr(0, text.size() - 1);
  return IsObjectId(id) ? id : "";
}

Result<VerifiedCommits> Workspaces::TakeCommits(const WorkspaceRecord& w, const CommitRules& rules,
                                                const std::optional<std::string>& commit_message) {
  ASSIGN_OR_RETURN(std::string base, BaseOf(w));
  VerifiedCommits v;
  // The bundle, made by the worker's git in the sandbox: bytes, whatever the worker did to its
  // repository. Packed without delta search and with light compression: it only crosses to
  // verified.git on this host, and the push packs for the network anyway. Each step is tried
  // before asking whether it had anything to do (a turn that changed files, the usual case, needs
  // no other git run): "nothing to commit" is told by nothing staged, and nothing over the base
  // (git refuses an empty bundle, after writing part of its header) by exit status 3.
  auto made = InSandbox(w,
                        "if [ \"$2\" = commit ]; then\n"
                        "  git add -A >&2 || exit 1\n"
                        "  git commit -q --no-verify -m \"$3\" >&2 || git diff --cached --quiet || exit 1\n"
                        "fi\n"
                        "git -c pack.window=0 -c pack.compression=1 bundle create -q - HEAD \"^$1\" && exit 0\n"
                        "n=$(git rev-list --count \"$1..HEAD\") || exit 1\n"
                        "[ \"$n\" = 0 ] && exit 3\n"
                        "exit 1\n",
                        {base, commit_message ? "commit" : "", commit_message.value_or("")}, true);
  const bool nothing = made.ok() && !made->cancelled && !made->timed_out && made->exit_code == 3;
  if (!nothing) RETURN_IF_ERROR(Failed("cannot bundle " + w.branch, made));
  std::lock_guard<std::mutex> lock(clone_mu_);
  ASSIGN_OR_RETURN(const Mirror m, MirrorOfRecord(w));
  const std::string& verified = m.verified;
  if (nothing || made->out.empty()) {
    if (fs::exists(fs::path(verified) / "HEAD")) (void)Git(verified, {"update-ref", "-d", IncomingRef(w.ticket)});
    return v;
  }
  if (made->out.size() > options_.max_bundle_bytes)
    return Status::InvalidArgument("the branch's commits take " + std::to_string(made->out.size()) +
                                    " bytes; a turn may hand back at most " + std::to_string(options_.max_bundle_bytes));
  if (!fs::exists(fs::path(verified) / "HEAD")) RETURN_IF_ERROR(SyncClone(m, nullptr));
  std::error_code ec;
  const fs::path incoming = fs::path(options_.root) / "incoming";
  fs::create_directories(incoming, ec);
  const fs::path file = incoming / (TicketName(w.ticket) + ".bundle");
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(made->out.data(), static_cast<std::streamsize>(made->out.size()));
    if (!out.flush()) return Status::IoError("cannot write " + file.string());
  }
  // Fetched into verified.git: git parses the bundle as it would a stranger's pack, in a
  // repository whose config, hooks and refs only the daemon writes. Only its HEAD is taken.
  auto fetched = Git(verified, {"-c", "maintenance.auto=false", "fetch", "-q", "--no-tags", "--no-write-fetch-head",
                                file.string(), "+HEAD:" + IncomingRef(w.ticket)},
                     0, nullptr, "", /*local=*/true);
  fs::remove(file, ec);
  RETURN_IF_ERROR(Failed("the branch's bundle was refused", fetched));
  // The fetch took the commit the bundle's header names for HEAD (git checked that the pack
  // holds it); git is asked only when the header cannot be read that way.
  v.tip = BundleHead(made->out);
  if (v.tip.empty()) {
    auto tip = Git(verified, {"rev-parse", "--verify", "-q", IncomingRef(w.ticket) + "^{commit}"});
    RETURN_IF_ERROR(Failed("cannot read the fetched branch", tip));
    v.tip = text::Trim(tip->out);
  }
  if (Status s = Check(verified, base, v.tip, rules, &v); !s.ok()) {
    (void)Git(verified, {"update-ref", "-d", IncomingRef(w.ticket)});
    spdlog::warn("commits refused ticket={} branch={}{} reason=\"{}\"", w.ticket, w.branch,
                 w.repo.empty() ? "" : " repo=" + w.repo, s.message());
    return s;
  }
  spdlog::info("commits verified ticket={} branch={} commits={} files={}{}", w.ticket, w.branch, v.ahead, v.files.size(),
               w.repo.empty() ? "" : " repo=" + w.repo);
  return v;
}

namespace {
// One "git diff-tree -r -z --raw" record: ":<old mode> <new mode> <old id> <new id> <status>" NUL <path> NUL.
struct RawChange {
  std::string old_mode, new_mode, new_id, path;
  char status = 0;
};

Result<std::vector<RawChange>> ParseRaw(const std::string& out) {
  std::vector<RawChange> changes;
  for (std::size_t at = 0; at < out.size();) {
    const std::size_t meta_end = out.find('\0', at);
    if (meta_end == std::string::npos || out[at] != ':') return Status::Internal("git diff-tree printed an odd record");
    const std::size_t path_end = out.find('\0', meta_end + 1);
    if (path_end == std::string::npos) return Status::Internal("git diff-tree printed a record without a path");
    std::vector<std::string> f;
    std::string meta = out.substr(at + 1, meta_end - at - 1);
    for (std::size_t p = 0; p <= meta.size();) {
      std::size_t sp = meta.find(' ', p);
      if (sp == std::string::npos) sp = meta.size();
      f.push_back(meta.substr(p, sp - p));
      p = sp + 1;
    }
    if (f.size() != 5 || f[4].empty()) return Status::Internal("git diff-tree printed an odd record");
    changes.push_back({f[0], f[1], f[3], out.substr(meta_end + 1, path_end - meta_end - 1), f[4][0]});
    at = path_end + 1;
  }
  return changes;
}

// Why a path may not be in the Ticket's branch, or "" when it may: a ".git" component (any case,
// with trailing dots or spaces, as some file systems read it) takes over whoever checks it out.
std::string RefusedPath(const std::string& path) {
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t end = path.find('/', at);
    if (end == std::string::npos) end = path.size();
    std::string part = text::AsciiLower(path.substr(at, end - at));
    while (!part.empty() && (part.back() == '.' || part.back() == ' ')) part.pop_back();
    if (part == ".git" || part == "git~1") return "names a .git directory";
    if (part.empty() || path.substr(at, end - at) == "..") return "is not a plain path";
    at = end + 1;
  }
  return "";
}

// Whether a symlink at `path` pointing at `target` stays inside the tree (and out of .git).
bool LinkStaysInside(const std::string& path, const std::string& target) {
  if (target.empty() || target[0] == '/' || target.find('\0') != std::string::npos) return false;
  int depth = static_cast<int>(std::count(path.begin(), path.end(), '/'));  // the link's own directory
  for (std::size_t at = 0; at <= target.size();) {
    std::size_t end = target.find('/', at);
    if (end == std::string::npos) end = target.size();
    const std::string part = target.substr(at, end - at);
    if (part == "..") {
      if (--depth < 0) return false;
    } else if (!part.empty() && part != ".") {
      if (!RefusedPath(part).empty()) return false;
      ++depth;
    }
    at = end + 1;
  }
  return true;
}

// A worker's path (or link target) as a person may read it in a report: quoted, cut, on one line.
std::string Shown(const std::string& path) {
  std::string s = text::Cut(text::Repair(path), 200);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return "\"" + s + "\"";
}
}  // namespace

Result<std::string> Workspaces::CodeBundle(const WorkspaceRecord& w) {
  // Everything the branch's HEAD reaches, and origin/<default> (the base's name in the worker's
  // clone). Not compressed harder than git's default: it crosses the network.
  auto made = InSandbox(w, "exec git bundle create -q - HEAD \"$1\"\n", {"refs/remotes/" + w.base}, true);
  RETURN_IF_ERROR(Failed("cannot bundle " + w.branch + " for a remote worker", made));
  if (made->out.empty()) return Status::Unavailable("git made an empty bundle of " + w.branch);
  return std::move(made->out);
}

Status Workspaces::ApplyBundle(const WorkspaceRecord& w, const std::string& bundle) {
  if (bundle.size() > options_.max_bundle_bytes)
    return Status::InvalidArgument("the worker's commits take " + std::to_string(bundle.size()) +
                                   " bytes; a turn may hand back at most " + std::to_string(options_.max_bundle_bytes));
  // In the sandbox's private temporary directory; fetched as the worker's own git would, then
  // checked out. A bundle git refuses changes nothing (set -e stops before the reset).
  auto applied = InSandbox(w,
                           "set -e\n"
                           "f=\"${TMPDIR:-/tmp}/superagent-return.bundle\"\n"
                           "cat > \"$f\"\n"
                           "git fetch -q --no-tags --no-write-fetch-head \"$f\" +HEAD:refs/superagent/returned >&2\n"
                           "rm -f \"$f\"\n"
                           "git reset -q --hard refs/superagent/returned\n"
                           "git update-ref -d refs/superagent/returned\n",
                           {}, false, nullptr, bundle);
  if (!applied.ok()) return applied.status();
  if (applied->exit_code != 0 && !applied->timed_out && !applied->cancelled)
    return Status::InvalidArgument("the worker's bundle was refused: " + text::TailLines(applied->err, 3, 300));
  return Failed("cannot apply the worker's commits to " + w.branch, applied);
}

Status Workspaces::Check(const std::string& verified, const std::string& base, const std::string& tip,
                         const CommitRules& rules, VerifiedCommits* v) {
  // "<behind>\t<ahead>": commits of the base the branch lacks (none when it descends from the
  // base) and the branch's own. One git run for both questions.
  auto count = Git(verified, {"rev-list", "--left-right", "--count", base + "..." + tip});
  RETURN_IF_ERROR(Failed("cannot compare the branch with its base", count));
  int behind = -1;
  try {
    const std::string counts = text::Trim(count->out);
    const std::size_t tab = counts.find('\t');
    if (tab == std::string::npos) throw std::invalid_argument("no tab");
    behind = std::stoi(counts.substr(0, tab));
    v->ahead = std::stoi(counts.substr(tab + 1));
  } catch (...) {
    return Status::Internal("git rev-list printed \"" + text::Cut(text::Repair(count->out), 80) + "\"");
  }
  if (behind != 0) return Status::InvalidArgument("the branch does not start from its base " + base.substr(0, 12));
  auto diff = Git(verified, {"diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-abbrev", base, tip});
  RETURN_IF_ERROR(Failed("cannot list the branch's changes", diff));
  ASSIGN_OR_RETURN(std::vector<RawChange> changes, ParseRaw(diff->out));
  if (changes.size() > options_.max_changed_files)
    return Status::InvalidArgument("the branch changes " + std::to_string(changes.size()) +
                                    " files; a Ticket may change at most " + std::to_string(options_.max_changed_files));
  std::string sizes_asked, links_asked;
  std::vector<const RawChange*> links;
  for (const RawChange& c : changes) {
    v->files.push_back(c.path);
    if (std::string why = RefusedPath(c.path); !why.empty()) return Status::InvalidArgument(Shown(c.path) + " " + why);
    if (c.path == ".gitmodules") return Status::InvalidArgument("the branch changes .gitmodules (submodules are not the worker's to change)");
    if (c.new_mode == "160000" && c.old_mode != "160000")
      return Status::InvalidArgument("the branch adds a submodule (gitlink) at " + Shown(c.path));
    if (!rules.workflows && c.path.rfind(".github/workflows/", 0) == 0)
      return Status::InvalidArgument("the branch changes " + Shown(c.path) +
                                      ": CI workflows change only when the request names .github/workflows");
    if (c.status == 'D') continue;
    if (c.new_mode == "120000") {
      links.push_back(&c);
      links_asked += c.new_id + "\n";
    } else if (c.new_mode != "160000") {
      sizes_asked += c.new_id + "\n";
    }
  }
  if (!sizes_asked.empty()) {
    auto sizes = Git(verified, {"cat-file", "--batch-check=%(objectsize)"}, 0, nullptr, sizes_asked);
    RETURN_IF_ERROR(Failed("cannot read the branch's file sizes", sizes));
    std::size_t i = 0, at = 0;
    for (const RawChange& c : changes) {
      if (c.status == 'D' || c.new_mode == "120000" || c.new_mode == "160000") continue;
      const std::size_t end = sizes->out.find('\n', at);
      if (end == std::string::npos) return Status::Internal("git cat-file printed too few sizes");
      std::uint64_t size = 0;
      try {
        size = std::stoull(sizes->out.substr(at, end - at));
      } catch (...) {
        return Status::Internal("git cat-file printed \"" + sizes->out.substr(at, std::min<std::size_t>(40, end - at)) + "\"");
      }
      if (size > options_.max_file_bytes)
        return Status::InvalidArgument(Shown(c.path) + " has " + std::to_string(size) + " bytes; a file may have at most " +
                                        std::to_string(options_.max_file_bytes));
      at = end + 1;
      ++i;
    }
  }
  if (!links_asked.empty()) {
    auto targets = Git(verified, {"cat-file", "--batch"}, 0, nullptr, links_asked);
    RETURN_IF_ERROR(Failed("cannot read the branch's links", targets));
    const std::string& out = targets->out;
    std::size_t at = 0;
    for (const RawChange* c : links) {
      // "<id> blob <size>\n<content>\n"
      const std::size_t header_end = out.find('\n', at);
      if (header_end == std::string::npos) return Status::Internal("git cat-file printed too few links");
      const std::string header = out.substr(at, header_end - at);
      const std::size_t sp = header.rfind(' ');
      std::size_t size = 0;
      try {
        size = std::stoul(header.substr(sp + 1));
      } catch (...) {
        return Status::Internal("git cat-file printed \"" + text::Cut(text::Repair(header), 80) + "\"");
      }
      if (header_end + 1 + size > out.size()) return Status::Internal("git cat-file printed a short link");
      const std::string target = out.substr(header_end + 1, size);
      if (!LinkStaysInside(c->path, target))
        return Status::InvalidArgument(Shown(c->path) + " is a link out of the repository (to " + Shown(target) + ")");
      at = header_end + 1 + size + 1;
    }
  }
  return Status::Ok();
}

namespace {
// The commit `listing` (git ls-remote's "<sha>\t<ref>" lines) names for exactly `ref`, or "".
std::string TipIn(const std::string& listing, const std::string& ref) {
  for (std::size_t at = 0; at < listing.size();) {
    std::size_t end = listing.find('\n', at);
    if (end == std::string::npos) end = listing.size();
    const std::string line = listing.substr(at, end - at);
    const std::size_t tab = line.find('\t');
    if (tab != std::string::npos && text::Trim(line.substr(tab + 1)) == ref) return line.substr(0, tab);
    at = end + 1;
  }
  return "";
}
}  // namespace

Status Workspaces::Push(const WorkspaceRecord& w) {
  std::lock_guard<std::mutex> lock(clone_mu_);
  ASSIGN_OR_RETURN(const Mirror m, MirrorOfRecord(w));
  const std::string& verified = m.verified;
  // What was verified: the ref TakeCommits' fetch wrote, read as a file (git asked otherwise).
  std::string tip = workspace_internal::LooseRef(verified, IncomingRef(w.ticket));
  if (tip.empty()) {
    auto listed = Git(verified, {"for-each-ref", "--format=%(refname) %(objectname)", IncomingRef(w.ticket)});
    RETURN_IF_ERROR(Failed("cannot read what was verified for " + w.branch, listed));
    for (const auto& [name, id] : ParseRefListing(listed->out))
      if (name == IncomingRef(w.ticket)) tip = id;
  }
  if (tip.empty()) return Status::Conflict("no verified commits to push for " + w.branch);
  const std::string ref = "refs/heads/" + w.branch;
  // Issue 34: the push replaces the branch, so it must be this install's to replace. The push is
  // pinned (--force-with-lease) to what this install pushed there last, or to "absent": the
  // usual case costs one round trip to the remote. A remote branch that is anything else makes
  // git refuse ("stale info"), and only then is the remote asked what it holds.
  // The remote is named for the push alone, its branches mapped to PushedRef: a lease given no
  // value is git's own "what the remote-tracking ref says" (this install's last push there, or
  // absent), and git records a push that went through (or found the branch there already) in
  // that ref itself. So the usual push is one git run.
  auto push = [&](const std::string& lease) {
    return Git(verified, {"-c", "remote.superagent.url=" + m.remote, "-c",
                          "remote.superagent.fetch=+refs/heads/*:" + PushedRef("*"), "push", "-q",
                          "--force-with-lease=" + lease, "superagent", tip + ":" + ref});
  };
  auto r = push(ref);
  auto stale = [](const Result<RunResult>& run) {
    return run.ok() && !run->cancelled && !run->timed_out && run->exit_code != 0 &&
           run->err.find("stale info") != std::string::npos;
  };
  if (stale(r)) {
    auto listed = Git(verified, {"ls-remote", m.remote, ref});
    RETURN_IF_ERROR(Failed("cannot read " + w.branch + " on the remote", listed));
    const std::string remote_tip = TipIn(listed->out, ref);
    if (!remote_tip.empty() && remote_tip != tip) {
      // Not what this install pushed there last. Taken over only when nothing on it would be lost:
      // the commits pushed contain it (a fast-forward; also a branch pushed by this install before
      // it recorded its pushes). A commit this repository does not have is never an ancestor.
      auto contained = Git(verified, {"merge-base", "--is-ancestor", remote_tip, tip});
      if (!contained.ok() || contained->exit_code != 0) {
        std::string pushed;  // for the log line: what this install pushed there last
        if (auto refs = Git(verified, {"for-each-ref", "--format=%(objectname)", PushedRef(w.branch)}); refs.ok())
          pushed = text::Trim(refs->out);
        spdlog::warn("branch push refused ticket={} branch={} remote_tip={} pushed_tip={}", w.ticket, w.branch,
                     remote_tip.substr(0, 12), pushed.empty() ? "none" : pushed.substr(0, 12));
        return Status::Conflict("the branch " + w.branch + " on the remote has commits this install did not push (its tip is " +
                                remote_tip.substr(0, 12) +
                                "), so it was left as it is and nothing was pushed; a person can move that branch "
                                "aside (rename or delete it) and ask again");
      }
    }
    r = push(ref + ":" + remote_tip);
    if (stale(r)) {
      spdlog::warn("branch push refused ticket={} branch={} reason=\"the remote branch moved during the push\"", w.ticket,
                   w.branch);
      return Status::Conflict("the branch " + w.branch +
                              " changed on the remote while it was being pushed, so nothing was pushed over it; the "
                              "next push looks again");
    }
  }
  // git records the push after it went through: a push whose record was lost (a crash in
  // between) leaves a remote tip that the next push's commits contain, which the rule above
  // still lets through.
  RETURN_IF_ERROR(Failed("cannot push " + w.branch, r));
  spdlog::info("branch pushed ticket={} branch={}{}", w.ticket, w.branch, w.repo.empty() ? "" : " repo=" + w.repo);
  return Status::Ok();
}

}  // namespace superagent::exec
