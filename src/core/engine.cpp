// The Engine (ARCHITECTURE.md): the single writer's lock, transaction and clock, the current
// policy, and the plain reads. Each SPEC event it applies lives in its own file, named after the
// SPEC, so a reader finds one transaction per event: intake.cpp, evals.cpp, tickets.cpp,
// turns.cpp, sessions.cpp, outbox.cpp, source_rounds.cpp, mailbox.cpp, policy_versions.cpp,
// panel_commands.cpp, quarantine.cpp (and explain.cpp for SPEC §12's explain). This file holds
// opening the store and what those files share (engine_internal.h).
#include <filesystem>

#include "core/engine_internal.h"
#include "store/store.h"
#include "superagent/chat.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

Engine::Engine(std::unique_ptr<store::Store> store, Clock* clock, EngineOptions options)
    : store_(std::move(store)), clock_(clock), options_(options) {}

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& db_path, Clock* clock, const Policy& policy,
                                             const std::string& policy_origin, EngineOptions options) {
  auto store = store::Store::Open(db_path);
  if (!store.ok()) return store.status();
  std::unique_ptr<Engine> engine(new Engine(std::move(*store), clock, options));
  {
    // Resume from the last stored version so a restart with an unchanged file makes no new
    // version. (Nobody else has the Engine yet; the lock is for the analysis's sake.)
    MutexLock lock(&engine->mu_);
    ASSIGN_OR_RETURN(auto latest, engine->store_->LatestPolicyVersion());
    if (latest) {
      auto stored = PolicyFromJson(json::parse(latest->body, nullptr, false));
      if (stored.ok()) {
        engine->policy_ = *stored;
        engine->policy_version_ = latest->version;
      }
    }
  }
  auto change = engine->ApplyPolicy(policy, policy_origin);
  if (!change.ok()) return change.status();
  return engine;
}

Result<std::unique_ptr<Engine>> Engine::OpenExisting(const std::string& db_path, Clock* clock,
                                                     EngineOptions options) {
  if (!std::filesystem::exists(db_path))
    return Status::NotFound("no database at " + db_path + " (has `superagent serve` run with this config?)");
  auto store = store::Store::Open(db_path);
  if (!store.ok()) return store.status();
  std::unique_ptr<Engine> engine(new Engine(std::move(*store), clock, options));
  MutexLock lock(&engine->mu_);
  ASSIGN_OR_RETURN(auto latest, engine->store_->LatestPolicyVersion());
  if (!latest) return Status::NotFound("the database at " + db_path + " has no policy version yet");
  auto stored = PolicyFromJson(json::parse(latest->body, nullptr, false));
  if (!stored.ok()) return stored.status();
  engine->policy_ = *stored;
  engine->policy_version_ = latest->version;
  return engine;
}

Policy Engine::CurrentPolicy() const {
  MutexLock lock(&mu_);
  return policy_;
}

std::int64_t Engine::PolicyVersion() const {
  MutexLock lock(&mu_);
  return policy_version_;
}

// ---------------------------------------------------------------------------------------------
// What the event files share (declared in core/engine_internal.h)

// Every message the Engine enqueues goes through here: the rule is the channel's platform's
// (EngineOptions::message_limit, set by app/), never core's.
namespace {
std::optional<MessageLimit> LimitOf(const std::string& channel, const EngineOptions& o) {
  if (!o.message_limit) return std::nullopt;
  return o.message_limit(channel);
}
}  // namespace

std::string TooLong(const std::string& channel, const std::string& body, const EngineOptions& o) {
  auto limit = LimitOf(channel, o);
  return limit && limit->too_long ? limit->too_long(body) : "";
}

std::string CutToLimit(const std::string& channel, const std::string& body, const EngineOptions& o) {
  auto limit = LimitOf(channel, o);
  return limit && limit->cut ? limit->cut(body) : body;
}

// Whether a message sent at `at` is older than the request that made the Mandate's Ticket.
Result<bool> OlderThanRequest(store::Store* store, const Mandate& m, TimeMs at) {
  ASSIGN_OR_RETURN(auto origin, store->FindTriggerBySeq(m.origin_trigger_seq));
  return origin && at < origin->trigger.at;
}

// ---------------------------------------------------------------------------------------------
// Counting

std::int64_t Engine::WriteTransactions() const {
  MutexLock lock(&mu_);
  return store_->WriteTransactions();
}

}  // namespace superagent
