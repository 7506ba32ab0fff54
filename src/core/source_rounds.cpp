// Source rounds (SPEC §3): a Source's bookkeeping between deliveries — cursors, each path's health,
// skipped counts — applied in one transaction per round (a webhook delivery applies the same in its
// intake transaction, intake.cpp); the system problems repeated failures raise; discussions gone at
// the platform; and the open discussions a Source keeps polling while work is in progress (SPEC §3.5).
#include <set>

#include <spdlog/spdlog.h>

#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/github_threads.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

std::string SourceProblemKind(const std::string& source, const std::string& path) {
  return "source:" + source + ":" + path;
}

}  // namespace

Status Engine::UpdateSource(const SourceUpdate& u) {
  MutexLock lock(&mu_);
  if (u.source.empty()) return Status::InvalidArgument("source update needs a source name");
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(const bool raised, UpdateSourceLocked(u, now));
  RETURN_IF_ERROR(tx->Commit());
  LogSourceUpdate(u, raised);
  return Status::Ok();
}

Result<int> Engine::QualifyGitHubThreads(const std::string& repo) {
  if (!github_threads::IsRepositoryName(repo))
    return Status::InvalidArgument("\"" + text::Cut(repo, 120) + "\" is not a GitHub repository (owner/name)");
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(const int threads, store_->QualifyGitHubKeys(github_threads::Canonical(repo)));
  RETURN_IF_ERROR(tx->Commit());
  if (threads > 0) spdlog::info("store github threads qualified repo={} threads={}", github_threads::Canonical(repo), threads);
  return threads;
}

Result<bool> Engine::UpdateSourceLocked(const SourceUpdate& u, TimeMs now) {
  for (const auto& [name, value] : u.set_cursors) RETURN_IF_ERROR(store_->SetCursor(u.source, name, value, now));
  for (const auto& name : u.erase_cursors) RETURN_IF_ERROR(store_->EraseCursor(u.source, name));
  bool raised = false;
  const bool abandoned = !u.ok && u.abandoned;
  if (!u.path.empty() && !abandoned) {
    RETURN_IF_ERROR(store_->RecordPathOutcome(u.source, u.path, u.ok, text::Repair(u.error), text::Repair(u.note), u.skipped, now));
    const std::string kind = SourceProblemKind(u.source, u.path);
    if (u.ok) {
      RETURN_IF_ERROR(store_->ClearFailures(kind, now));
    } else {
      auto n = store_->CountFailure(kind, u.source + " " + u.path + ": " + u.error, now);
      if (!n.ok()) return n.status();
      raised = *n == options_.problem_threshold;
    }
  }
  return raised;
}

void Engine::LogSourceUpdate(const SourceUpdate& u, bool raised) const {
  const bool abandoned = !u.ok && u.abandoned;
  if (abandoned) {
    // "github read abandoned …": the platform first, as a person greps it; a repository's Source
    // ("github:acme/api") says which after the path.
    const std::size_t colon = u.source.find(':');
    spdlog::info("{} read abandoned at shutdown path={}{} error=\"{}\"", u.source.substr(0, colon), u.path,
                 colon == std::string::npos ? "" : " source=" + u.source, u.error);
  } else if (!u.ok) {
    if (raised)
      spdlog::error("system problem source={} path={} failures={} error=\"{}\"", u.source, u.path,
                    options_.problem_threshold, u.error);
    else
      spdlog::warn("source read failed source={} path={} error=\"{}\"", u.source, u.path, u.error);
  }
  if (u.skipped > 0) spdlog::warn("source skipped malformed items source={} path={} count={}", u.source, u.path, u.skipped);
}

Status Engine::MarkThreadDeleted(const std::string& thread, const std::string& why) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(thread));
  if (!channel) return Status::NotFound("thread " + thread + " is unknown");
  RETURN_IF_ERROR(store_->MarkThreadDeleted(thread, clock_->NowMs()));
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("thread deleted thread={} reason=\"{}\"", thread, why);
  return Status::Ok();
}

Status Engine::SetSourceEnabled(const std::string& source, bool enabled) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(store_->SetSourceEnabled(source, enabled));
  return tx->Commit();
}

Status Engine::ReportFailure(const std::string& kind, const std::string& message) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  auto n = store_->CountFailure(kind, text::Repair(message), clock_->NowMs());
  if (!n.ok()) return n.status();
  RETURN_IF_ERROR(tx->Commit());
  if (*n == options_.problem_threshold)
    spdlog::error("system problem kind={} failures={} error=\"{}\"", kind, *n, message);
  return Status::Ok();
}

Status Engine::ReportSuccess(const std::string& kind) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(store_->ClearFailures(kind, clock_->NowMs()));
  return tx->Commit();
}

}  // namespace superagent
