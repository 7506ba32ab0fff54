// What a worker's report and its git/PR actions do to the domain: all through the Engine, so the
// result message and the PR leave through the outbox, after the acknowledgement.
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "superagent/assign_or_return.h"
#include "superagent/github_threads.h"
#include "superagent/beneath.h"
#include "superagent/question.h"
#include "superagent/text.h"
#include "superagent/worker.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

// "form.options[2]: is empty" (question.h's words) as the worker wrote it: "report.options[2]: ...".
Status Renamed(const Status& s, const std::string& what) {
  std::string m = s.message();
  if (m.rfind("form.", 0) == 0) m = what + "." + m.substr(5);
  return Status::InvalidArgument(m);
}

bool StartsWithWord(const std::string& label, const std::string& word) {
  return text::AsciiLower(label.substr(0, word.size())) == text::AsciiLower(word);
}

// A commit id in a label: a run of 7 to 40 hex digits standing alone.
bool NamesACommit(const std::string& label) {
  std::size_t run = 0;
  for (std::size_t i = 0; i <= label.size(); ++i) {
    const char c = i < label.size() ? label[i] : ' ';
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    const bool word = hex || (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z') || c == '_';
    if (hex) {
      ++run;
      continue;
    }
    if (!word && run >= 7 && run <= 40) return true;
    run = word ? 41 : 0;  // a hex run glued to other letters ("deadbeefs") is a word, not an id
  }
  return false;
}

}  // namespace

Result<WorkerReport> ParseReport(const json& j, const std::string& what) {
  if (!j.is_object()) return Status::InvalidArgument("a " + what + " must be a JSON object");
  WorkerReport r;
  const std::string stage = j.contains("stage") && j["stage"].is_string() ? j["stage"].get<std::string>() : "";
  if (stage == "ready") r.stage = Stage::kReady;
  else if (stage == "blocked") r.stage = Stage::kBlocked;
  else if (stage == "waiting_for_person") r.stage = Stage::kWaitingForPerson;
  else return Status::InvalidArgument(what + ".stage must be ready, blocked or waiting_for_person");
  if (!j.contains("summary") || !j["summary"].is_string() || text::Trim(j["summary"].get<std::string>()).empty())
    return Status::InvalidArgument(what + ".summary must be a non-empty string");
  r.summary = text::Repair(j["summary"].get<std::string>());
  if (j.contains("question") && !j["question"].is_null()) {
    if (!j["question"].is_string()) return Status::InvalidArgument(what + ".question must be a string or null");
    r.question = text::Trim(text::Repair(j["question"].get<std::string>()));
  }
  if (r.stage == Stage::kWaitingForPerson && (!r.question || r.question->empty()))
    return Status::InvalidArgument(what + ".question is required when stage is waiting_for_person");
  // The form's two keys sit beside the question; question.h alone decides what they may hold.
  json form = json::object();
  for (const char* key : {"options", "free_text"})
    if (auto it = j.find(key); it != j.end() && !it->is_null()) form[key] = *it;
  if (!form.empty()) {
    auto parsed = ParseQuestionForm(form);
    if (!parsed.ok()) return Renamed(parsed.status(), what);
    if (r.stage != Stage::kWaitingForPerson)
      return Status::InvalidArgument(what + ".options and " + what + ".free_text belong to a question (stage waiting_for_person)");
    if (!parsed->options.empty()) r.question_form = QuestionFormJson(*parsed);
  }
  if (auto it = j.find("ask"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return Status::InvalidArgument(what + ".ask must be a string (who is asked) or null");
    r.ask = text::Trim(text::Repair(it->get<std::string>()));
  }
  if (j.contains("pr") && !j["pr"].is_null()) {
    const json& pr = j["pr"];
    if (!pr.is_object() || !pr.contains("title") || !pr["title"].is_string() || pr["title"].get<std::string>().empty())
      return Status::InvalidArgument(what + ".pr must be null or {\"title\": \"...\", \"body\": \"...\"}");
    r.pr = PullRequestSpec{text::Repair(pr["title"].get<std::string>()),
                           pr.contains("body") && pr["body"].is_string() ? text::Repair(pr["body"].get<std::string>()) : "",
                           {}};
  }
  if (auto it = j.find("screenshots"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument(what + ".screenshots must be an array of {\"label\", \"path\"}");
    if (it->size() > 20) return Status::InvalidArgument(what + ".screenshots: at most 20");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& shot = (*it)[i];
      const std::string where = what + ".screenshots[" + std::to_string(i) + "]";
      if (!shot.is_object()) return Status::InvalidArgument(where + " must be {\"label\": \"...\", \"path\": \"...\"}");
      Screenshot s;
      for (auto [key, field] : {std::pair<const char*, std::string*>{"label", &s.label}, {"path", &s.path}}) {
        auto f = shot.find(key);
        if (f == shot.end() || !f->is_string() || text::Trim(f->get<std::string>()).empty())
          return Status::InvalidArgument(where + "." + key + " must be a non-empty string");
        *field = text::Trim(text::Repair(f->get<std::string>()));
      }
      if (text::CountCodePoints(s.label) > 200) return Status::InvalidArgument(where + ".label: longer than 200 characters");
      r.screenshots.push_back(std::move(s));
    }
  }
  return r;
}

std::vector<std::string> WorkerServicesOptions::DefaultUiPaths() {
  return {"web/**", "*.css", "*.scss", "*.html", "*.vue", "*.tsx", "*.jsx", "*.svelte"};
}

bool MatchesUiPath(const std::vector<std::string>& globs, const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  for (const std::string& g : globs) {
    if (g.empty()) continue;
    // Without FNM_PATHNAME '*' crosses '/', so "web/**" is everything below web/.
    const bool whole = g.find('/') != std::string::npos;
    if (::fnmatch(g.c_str(), whole ? path.c_str() : name.c_str(), 0) == 0) return true;
  }
  return false;
}

Result<std::vector<std::string>> WorkerServices::ChangedUiPaths(const WorkerTask& task) {
  if (workspaces_ == nullptr) return Status::Unavailable("no workspaces to look at");
  ASSIGN_OR_RETURN(std::vector<std::string> changed, workspaces_->ChangedFiles(task.workspace));
  std::vector<std::string> ui;
  for (const std::string& p : changed)
    if (MatchesUiPath(options_.ui_paths, p)) ui.push_back(p);
  return ui;
}

namespace {

// Every check of CheckReport but the UI rule; *before / *after: whether the screenshots carry a
// Before and an After.
Status CheckReportShape(const WorkerServicesOptions& options, const WorkerTask& task, const WorkerReport& report,
                        bool* before_shown, bool* after_shown) {
  if (report.stage == Stage::kWaitingForPerson && !report.ask.empty()) {
    // SPEC §4.1: the asked person's next message on the Thread resumes the Ticket; who that is
    // is the Mandate's, not something text the worker read may choose.
    const std::string requester = task.mandate.sender.value_or("");
    auto bare = [](std::string who) { return text::AsciiLower(who.rfind('@', 0) == 0 ? who.substr(1) : who); };
    if (requester.empty() || bare(report.ask) != bare(requester))
      return Status::InvalidArgument("ask: a question goes to the person who asked" +
                                     (requester.empty() ? std::string(" (this Ticket has none: say it in a blocked report)")
                                                        : " (" + requester + ")") +
                                     "; leave \"ask\" out, or name another person in the question's text");
  }
  if (report.stage != Stage::kReady) return Status::Ok();
  // Every screenshot given is checked, UI change or not: each is committed and shown in the PR.
  bool before = false, after = false;
  for (std::size_t i = 0; i < report.screenshots.size(); ++i) {
    const Screenshot& s = report.screenshots[i];
    const std::string where = "screenshots[" + std::to_string(i) + "]";
    before = before || StartsWithWord(s.label, "before");
    after = after || StartsWithWord(s.label, "after");
    if (!NamesACommit(s.label))
      return Status::InvalidArgument(where + ".label \"" + s.label +
                                     "\" names no version: add the commit it shows, e.g. \"Before (main abc1234)\"");
    // Beneath the Ticket's directory only: "..", an absolute path or a link out is refused.
    auto fd = beneath::Open(task.workspace.dir, s.path, O_RDONLY | O_NONBLOCK);
    if (!fd.ok()) return Status::InvalidArgument(where + ".path: " + fd.status().message());
    struct stat st {};
    unsigned char magic[8] = {};
    const bool file = ::fstat(*fd, &st) == 0 && S_ISREG(st.st_mode);
    const ssize_t got = file ? ::read(*fd, magic, sizeof magic) : -1;
    ::close(*fd);
    if (!file) return Status::InvalidArgument(where + ".path: " + s.path + " is not a file");
    if (static_cast<std::uint64_t>(st.st_size) > options.screenshot_max_bytes)
      return Status::InvalidArgument(where + ".path: " + s.path + " has " + std::to_string(st.st_size) +
                                     " bytes; a screenshot may have at most " +
                                     std::to_string(options.screenshot_max_bytes));
    static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    const bool png = got == 8 && std::equal(std::begin(kPng), std::end(kPng), magic);
    const bool jpeg = got >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF;
    if (!png && !jpeg) return Status::InvalidArgument(where + ".path: " + s.path + " is not a PNG or JPEG image");
    if (s.path.rfind(".git/", 0) == 0 || s.path.find("/.git/") != std::string::npos)
      return Status::InvalidArgument(where + ".path: " + s.path + " is inside .git");
  }
  *before_shown = before;
  *after_shown = after;
  return Status::Ok();
}

// The UI rule (SPEC §6) for a ready report whose branch changes the UI paths `ui`.
Status CheckUiScreenshots(const std::vector<std::string>& ui, bool before, bool after) {
  if (ui.empty() || (before && after)) return Status::Ok();
  const std::string missing = before ? "an After" : after ? "a Before" : "a Before and an After";
  return Status::InvalidArgument(
      "the branch changes the UI (" + ui.front() +
      (ui.size() > 1 ? " and " + std::to_string(ui.size() - 1) + " more" : "") +
      "), so a ready report needs \"screenshots\" with " + missing +
      ": [{\"label\": \"Before (main <commit>)\", \"path\": \"...png\"}, {\"label\": \"After (<branch> <commit>)\", "
      "\"path\": \"...png\"}] — PNG or JPEG files in the Ticket's directory showing the same scene, viewport, theme "
      "and state (SPEC §6)");
}

}  // namespace

Status WorkerServices::CheckReport(const WorkerTask& task, const WorkerReport& report) {
  bool before = false, after = false;
  RETURN_IF_ERROR(CheckReportShape(options_, task, report, &before, &after));
  if (report.stage != Stage::kReady || options_.ui_paths.empty() || (before && after)) return Status::Ok();
  auto ui = ChangedUiPaths(task);
  if (!ui.ok()) return Status::Unavailable("cannot tell whether the branch changes the UI: " + ui.status().message());
  return CheckUiScreenshots(*ui, before, after);
}

TeamFiles WorkerServices::Team() const {
  TeamFiles team = LoadTeamFiles(options_.team_dir);
  if (!team.problems.empty()) {
    std::string problems;
    for (const std::string& p : team.problems) problems += (problems.empty() ? "" : "; ") + p;
    spdlog::warn("prompts.team_dir problems dir=\"{}\" problems=\"{}\"", options_.team_dir, problems);
  }
  return team;
}

CommitRules CommitRulesFor(const WorkerTask& task) {
  CommitRules rules;
  // CI runs with the repository's secrets: a Ticket changes it only when a person allowed to ask
  // named it in the request itself — never on a model's say, never on inferred work.
  rules.workflows = task.mandate.strength == Strength::kExplicit &&
                    task.request_text.find(".github/workflows") != std::string::npos;
  return rules;
}

Result<int> WorkerServices::CommitAndPush(const WorkerTask& task, const std::string& message) {
  // The worker's git commits in its sandbox; the daemon takes the branch out as a bundle,
  // verifies it apart from anything the worker can write, and pushes what it verified.
  auto verified = workspaces_->TakeCommits(task.workspace, CommitRulesFor(task),
                                           message.empty() ? "Work on ticket " + std::to_string(task.ticket) : message);
  if (!verified.ok()) return verified.status();
  if (verified->ahead > 0) {
    RETURN_IF_ERROR(workspaces_->Push(task.workspace));
    NotePushed(task, *verified);
  }
  // The Ticket's other repositories (issue 37) likewise, each to its own remote.
  for (const WorkspaceRecord& w : task.other_workspaces) {
    auto other = workspaces_->TakeCommits(w, CommitRulesFor(task),
                                          message.empty() ? "Work on ticket " + std::to_string(task.ticket) : message);
    if (!other.ok()) return other.status().Prefixed(w.repo + ": ");
    if (other->ahead == 0) continue;
    RETURN_IF_ERROR(workspaces_->Push(w).Prefixed(w.repo + ": "));
    NotePushed(task, *other, &w);
  }
  return verified->ahead;
}

void WorkerServices::NotePushed(const WorkerTask& task, const VerifiedCommits& verified, const WorkspaceRecord* other) {
  // On the Ticket's history: the first of these is its time to first commit (issue 38 §4).
  if (engine_ == nullptr) return;
  Status noted = engine_->NoteTicket(task.ticket, "pushed " + std::to_string(verified.ahead) + " commit" +
                                                      (verified.ahead == 1 ? "" : "s") + " to " + task.workspace.branch +
                                                      (other != nullptr ? " in " + other->repo : ""));
  if (!noted.ok()) spdlog::warn("push not noted ticket={} error=\"{}\"", task.ticket, noted.message());
}

namespace {

// The PR body's screenshots: images linked relative to the PR's own page (…/pull/N →
// ../blob/<branch>/<path>), so they show the files committed on the branch without the daemon
// knowing the host's URL. `?raw=true` makes GitHub serve the image itself.
std::string ScreenshotsMarkdown(const std::string& branch, const std::vector<Screenshot>& shots) {
  if (shots.empty()) return "";
  auto escaped = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '[' || c == ']' || c == '\\') out += '\\';
      if (c != '\n' && c != '\r') out += c;
    }
    return out;
  };
  auto url = [](const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
      if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
        out += static_cast<char>(c);
      } else {
        static const char* kHex = "0123456789ABCDEF";
        out += '%';
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    }
    return out;
  };
  std::string md = "\n\n## Screenshots\n";
  for (const Screenshot& s : shots)
    md += "\n**" + escaped(s.label) + "**\n\n![" + escaped(s.label) + "](../blob/" + url(branch) + "/" + url(s.path) +
          "?raw=true)\n";
  return md;
}

// The pull request's branch taken out of the sandbox and verified, not yet pushed: the
// screenshots travel with it (a .gitignore naming them does not keep them out), so the PR links
// them from there and they stay beside the change they show.
Result<VerifiedCommits> TakePullRequestCommits(Workspaces* workspaces, const WorkerTask& task, const PullRequestSpec& pr) {
  if (pr.title.empty()) return Status::InvalidArgument("a pull request needs a title");
  std::vector<std::string> shots;
  for (const Screenshot& s : pr.screenshots) shots.push_back(s.path);
  RETURN_IF_ERROR(workspaces->AddFiles(task.workspace, shots));
  return workspaces->TakeCommits(task.workspace, CommitRulesFor(task), pr.title);
}

// One repository's verified branch, for its pull request.
struct PullRequestBranch {
  const WorkspaceRecord* workspace;
  VerifiedCommits verified;
};

// The other repositories' branches (issue 37) taken and verified like the Ticket's own: those
// with commits over their base, each to get its pull request. A refusal names the repository.
Result<std::vector<PullRequestBranch>> TakeOtherCommits(Workspaces* workspaces, const WorkerTask& task,
                                                        const PullRequestSpec& pr) {
  std::vector<PullRequestBranch> out;
  for (const WorkspaceRecord& w : task.other_workspaces) {
    auto verified = workspaces->TakeCommits(w, CommitRulesFor(task), pr.title);
    if (!verified.ok()) return verified.status().Prefixed(w.repo + ": ");
    if (verified->ahead > 0) out.push_back({&w, *verified});
  }
  return out;
}

// The idempotency key of a Ticket's pull request in repository `repo`: its own repository's is
// "pr:ticket:<id>" (as before issue 37), another's names the repository too. The auto-merge guard
// looks for the same key's marker in the PR's body.
std::string PullRequestKey(const WorkerTask& task, const WorkspaceRecord& w) {
  const std::string key = "pr:ticket:" + std::to_string(task.ticket);
  return &w == &task.workspace ? key : key + ":" + w.repo;
}

// The verified branch of `w` pushed, and the `open_pull_request` action's payload.
Result<json> PushPullRequest(Workspaces* workspaces, const WorkerTask& task, const WorkspaceRecord& w,
                             const PullRequestSpec& pr, const VerifiedCommits& verified) {
  if (verified.ahead == 0) return Status::Conflict("branch " + w.branch + " has no commits over " + w.base);
  RETURN_IF_ERROR(workspaces->Push(w));
  // The branch the workspace was made from ("origin/<default>"), as Prepare recorded it; git is
  // asked only for a record that does not say.
  const std::string& from = w.base;
  auto base = from.rfind("origin/", 0) == 0 && from.size() > 7 ? Result<std::string>(from.substr(7))
                                                                 : workspaces->DefaultBranch(w.repo);
  if (!base.ok()) return base.status();
  spdlog::info("pull request requested ticket={} head={} base={}{}", task.ticket, w.branch, *base,
               &w == &task.workspace ? "" : " repo=" + w.repo);
  std::string body = pr.body;
  if (&w == &task.workspace) body += ScreenshotsMarkdown(w.branch, pr.screenshots);
  if (!task.other_workspaces.empty()) {
    std::string all = workspaces->RepositoryOf(task.workspace);
    for (const WorkspaceRecord& o : task.other_workspaces) all += ", " + o.repo;
    body += "\n\nPart of one change across repositories (" + all + "), Ticket #" + std::to_string(task.ticket) + ".";
  }
  // The pull request goes to the repository the workspace was made from.
  return json{{"channel", github_threads::Repository(workspaces->RepositoryOf(w))},
              {"idempotency_key", PullRequestKey(task, w)},
              {"ticket", task.ticket},
              {"head", w.branch},
              {"base", *base},
              {"title", pr.title},
              {"body", body}};
}

// Every changed repository's branch pushed, and one `open_pull_request` action per repository:
// the Ticket's own first, then the others in the order they were made. Conflict when no
// repository has commits over its base.
Result<std::vector<json>> PushPullRequests(Workspaces* workspaces, const WorkerTask& task, const PullRequestSpec& pr,
                                           const VerifiedCommits& own,
                                           const std::vector<PullRequestBranch>& others) {
  std::vector<json> actions;
  if (own.ahead > 0 || others.empty()) {
    ASSIGN_OR_RETURN(json action, PushPullRequest(workspaces, task, task.workspace, pr, own));
    actions.push_back(std::move(action));
  }
  for (const PullRequestBranch& b : others) {
    auto action = PushPullRequest(workspaces, task, *b.workspace, pr, b.verified);
    if (!action.ok()) return action.status().Prefixed(b.workspace->repo + ": ");
    actions.push_back(std::move(*action));
  }
  return actions;
}

}  // namespace

Result<std::vector<json>> WorkerServices::PreparePullRequests(const WorkerTask& task, const PullRequestSpec& pr) {
  ASSIGN_OR_RETURN(VerifiedCommits verified, TakePullRequestCommits(workspaces_, task, pr));
  ASSIGN_OR_RETURN(std::vector<PullRequestBranch> others, TakeOtherCommits(workspaces_, task, pr));
  auto actions = PushPullRequests(workspaces_, task, pr, verified, others);
  if (actions.ok()) {
    if (verified.ahead > 0) NotePushed(task, verified);
    for (const PullRequestBranch& b : others) NotePushed(task, b.verified, b.workspace);
  }
  return actions;
}

Status WorkerServices::OpenPullRequest(const WorkerTask& task, const PullRequestSpec& pr) {
  auto actions = PreparePullRequests(task, pr);
  if (!actions.ok()) return actions.status();
  for (const json& action : *actions) RETURN_IF_ERROR(engine_->EnqueueAction("open_pull_request", action));
  return Status::Ok();
}

TurnEnd WorkerServices::EndFor(const WorkerTask& task, const WorkerReport& report) {
  TurnEnd end;
  end.assignment = task.assignment;
  end.reported = report.stage;
  end.summary = report.summary;
  end.question = report.question.value_or("");
  end.question_form = report.question_form;
  end.error = report.failure;
  auto refuse = [&](const Status& refused) {
    end.reported = Stage::kBlocked;
    end.question.clear();
    end.question_form = nullptr;
    end.summary += "\n\nThe report was not accepted as " + std::string(StageName(report.stage)) + ": " + refused.message();
    return end;
  };
  // The reason may quote git or a commit check's output: the panel's card has it, the discussion
  // hears the daemon's words (issue 34).
  auto no_pull_request = [&](const Status& failed) {
    end.reported = Stage::kBlocked;
    end.summary += "\n\nThe pull request could not be opened; a maintainer can see why on the panel.";
    end.error = "the pull request could not be opened: " + failed.message();
    return end;
  };
  // Every executor's report passes the same checks; the built-in worker met them at its tool
  // (and could correct itself), so here they catch a coding CLI's or a command's final report.
  if (report.stage != Stage::kReady || !report.pr) {
    if (Status refused = CheckReport(task, report); !refused.ok()) return refuse(refused);
    return end;
  }
  // A ready report with a PR: the UI rule is held to the files of the verified branch, which
  // the commits are taken for anyway — one sandboxed git run fewer than asking the directory.
  bool before = false, after = false;
  if (Status refused = CheckReportShape(options_, task, report, &before, &after); !refused.ok()) return refuse(refused);
  // The push happens here, before the turn's transaction; the PR itself is an outbox action
  // enqueued with the result, so both or neither are recorded.
  PullRequestSpec pr = *report.pr;
  pr.screenshots = report.screenshots;
  auto verified = TakePullRequestCommits(workspaces_, task, pr);
  if (!verified.ok()) return no_pull_request(verified.status());
  auto others = TakeOtherCommits(workspaces_, task, pr);
  if (!others.ok()) return no_pull_request(others.status());
  std::vector<std::string> ui;
  for (const std::string& path : verified->files)
    if (MatchesUiPath(options_.ui_paths, path)) ui.push_back(path);
  for (const PullRequestBranch& b : *others)
    for (const std::string& path : b.verified.files)
      if (MatchesUiPath(options_.ui_paths, path)) ui.push_back(b.workspace->repo + ":" + path);
  if (Status refused = CheckUiScreenshots(ui, before, after); !refused.ok()) return refuse(refused);
  auto actions = PushPullRequests(workspaces_, task, pr, *verified, *others);
  if (!actions.ok()) return no_pull_request(actions.status());
  if (verified->ahead > 0) NotePushed(task, *verified);
  for (const PullRequestBranch& b : *others) NotePushed(task, b.verified, b.workspace);
  for (json& action : *actions) end.actions.emplace_back("open_pull_request", std::move(action));
  return end;
}

}  // namespace superagent::exec
