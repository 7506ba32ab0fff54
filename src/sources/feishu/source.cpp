// The Feishu Source (SPEC §3.4, §3.5): three read paths feeding Engine::Receive.
//   realtime  — events from the long connection or the HTTP callback (HandleEvent);
//   backfill  — every configured group chat and every known, allowed direct chat, each from its
//               own cursor (a chat seen first records now); topic replies through the thread
//               container, since the chat container shows only topic roots;
//   threads   — topic threads the system follows: with a live Ticket always, others for 14 days
//               after their last activity, each with its own pollError; and topics opened later
//               on an open Ticket's request or on what the daemon posted for it, which no listing
//               shows (issue 34): those messages are looked up each round until one has a topic.
// Cursors live in the Engine's source cursor store under "chat:<id>" and "thread:<id>". The
// threads path is in source_threads.cpp.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "superagent/feishu.h"
#include "superagent/json_read.h"
#include "superagent/metrics.h"

#include "sources/feishu/source_internal.h"

namespace superagent::feishu {

using nlohmann::json;

using namespace polling;


Source::Source(Engine* engine, Views* views, Client* client, Clock* clock, SourceOptions options)
    : engine_(engine), views_(views), client_(client), clock_(clock), options_(std::move(options)),
      click_loop_({"the feishu card actions", 60'000, engine_}, [this]() -> std::optional<TimeMs> {
        DrainCardActions();
        return std::nullopt;
      }),
      poller_({"the feishu poller", options_.poll_interval_ms, engine_}, [this]() -> std::optional<TimeMs> {
        RunOnce();  // a round that throws is logged and recorded by the loop's guard
        return std::nullopt;
      }) {}

Source::~Source() { Stop(); }

std::string Source::BotOpenId() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bot_open_id_;
}

NormalizeContext Source::Context() const { return NormalizeContext{BotOpenId(), client_->options().app_id}; }

Status Source::Report(SourceUpdate u) { return sources::ReportRound(*engine_, std::move(u), client_->options().cancel); }

bool Source::EnsureIdentity(RoundReport* report) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (identity_confirmed_) return true;
  }
  auto id = client_->BotOpenId();
  SourceUpdate u;
  u.source = kSource;
  u.path = "identity";
  u.ok = id.ok();
  if (!id.ok()) u.error = id.status().message();
  else u.set_cursors["identity"] = json{{"open_id", *id}}.dump();
  if (Status s = Report(u); !s.ok()) spdlog::error("feishu identity update failed: {}", s.ToString());
  if (!id.ok()) {
    if (report) report->errors.push_back(id.status().message());
    spdlog::warn("feishu identity unknown error=\"{}\"", id.status().message());
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (bot_open_id_ != *id) spdlog::info("feishu identity open_id={}", *id);
  bot_open_id_ = *id;  // replaces a stored one the callback adopted (AdoptStoredIdentity)
  identity_confirmed_ = true;
  return true;
}

bool Source::AdoptStoredIdentity() {
  if (!BotOpenId().empty()) return true;
  auto cursors = views_->SourceCursors(kSource);
  if (!cursors.ok()) {  // unknown for now: the round learns it from Feishu
    spdlog::warn("feishu identity not read from the store error=\"{}\"", cursors.status().message());
    return false;
  }
  auto it = cursors->find("identity");
  if (it == cursors->end()) return false;
  json j = json::parse(it->second, nullptr, false);
  if (!j.is_object() || !j.contains("open_id") || !j["open_id"].is_string() || j["open_id"].get<std::string>().empty())
    return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (bot_open_id_.empty()) {
    bot_open_id_ = j["open_id"].get<std::string>();
    spdlog::info("feishu identity open_id={} from=stored (confirmed by the next round)", bot_open_id_);
  }
  return true;
}

std::string Source::FilterReason(const Trigger& t) const {
  if (json_read::BoolOr(t.meta, "own")) return "own_message";
  if (t.scope.rfind("chat:", 0) == 0 && !t.addressed) {
    // A group the policy does not configure reaches the system only when it @-mentions the agent.
    Policy policy = engine_->CurrentPolicy();
    auto src = policy.sources.find(kSource);
    if (src == policy.sources.end() || !src->second.scopes.count(t.scope)) return "chat_not_allowed";
  }
  return "";
}

void Source::Receive(const Normalized& n, const std::string& via, Intake* intake, RoundReport* report) {
  if (n.kind == Normalized::Kind::kMalformed || n.kind == Normalized::Kind::kUnsupported)
    return sources::SkipItem(kSource, via, n.why, intake, report);
  if (n.kind != Normalized::Kind::kTrigger) return;
  const Trigger& t = n.trigger;
  const std::string reason = FilterReason(t);
  if (!sources::ReceiveTrigger(*engine_, kSource, t, via, reason, nullptr, intake, report)) return;
  if (reason.empty()) NoteChat(t);
}

// Remembers what later rounds must read: an allowed direct chat (backfilled from now on) and
// every topic thread seen in a chat the Source reads (its replies never show in the chat listing,
// so one posted while the daemon was down is found only by reading the thread; issue 23).
void Source::NoteChat(const Trigger& t) {
  const std::string chat = ChatOf(t);
  const std::string thread_id = json_read::StringOr(t.meta, "thread_id");
  const bool follow_thread = !thread_id.empty();
  bool note_direct = false;
  if (t.scope == "direct" && !chat.empty()) {
    Policy policy = engine_->CurrentPolicy();
    auto src = policy.sources.find(kSource);
    if (src != policy.sources.end()) {
      const std::string actor = t.actor.value_or("");
      auto row = src->second.scopes.find("direct");
      note_direct = src->second.IsPerson(actor) || src->second.IsBot(actor) ||
                    (row != src->second.scopes.end() && row->second.others_addressed != Strength::kNone);
    }
  }
  if (!note_direct && !follow_thread) return;
  auto read = views_->SourceCursors(kSource);
  if (!read.ok()) {  // the next round's backfill and thread polls find it again
    spdlog::error("feishu cursors not read, thread not followed error=\"{}\"", read.status().message());
    return;
  }
  const auto& cursors = *read;
  SourceUpdate u;
  u.source = kSource;
  if (note_direct && !cursors.count("chat:" + chat)) {
    u.set_cursors["chat:" + chat] = json{{"since", clock_->NowMs()}, {"direct", true}}.dump();
    spdlog::info("feishu direct chat known chat={}", chat);
  }
  if (follow_thread) {
    json c = ParseCursor(cursors, "thread:" + thread_id);
    bool changed = false;
    if (c.is_null()) {
      c = json{{"since", t.at - options_.overlap_ms}, {"chat_id", chat}};
      changed = true;
      spdlog::info("feishu following thread={}", thread_id);
    }
    // The message the topic grew on: when it is an open Ticket's, the topic is known and that
    // message is not looked up for one (FindLateThreads).
    if (const std::string root = TopicRootOf(t); !root.empty() && !c.contains("root")) {
      c["root"] = root;
      changed = true;
    }
    if (t.at > Int(c, "last_activity")) {
      c["last_activity"] = t.at;
      changed = true;
    }
    if (changed) u.set_cursors["thread:" + thread_id] = c.dump();
  }
  if (u.set_cursors.empty()) return;
  if (Status s = Report(u); !s.ok()) spdlog::error("feishu cursor update failed: {}", s.ToString());
}

Status Source::ReadThread(const std::string& thread_id, TimeMs since, bool direct, Intake* intake,
                          RoundReport* report) {
  // The thread container takes no start_time: the whole thread is read and older items skipped.
  auto items = client_->ListMessages("thread", thread_id, std::nullopt, options_.max_pages);
  if (!items.ok()) return items.status();
  const NormalizeContext ctx = Context();
  for (const json& item : *items) {
    Normalized n = NormalizeHistoryItem(item, ctx, direct);
    if (n.kind == Normalized::Kind::kTrigger && n.trigger.at < since) continue;
    Receive(n, "poll:thread", intake, report);
    if (!intake->error.empty()) return Status::Internal(intake->error);
  }
  return Status::Ok();
}

void Source::Backfill(RoundReport* report) {
  auto read = CursorsOrReport(views_, report);
  if (!read) return;
  auto cursors = std::move(*read);
  const TimeMs now = clock_->NowMs();
  std::map<std::string, bool> chats;  // chat id → direct
  Policy policy = engine_->CurrentPolicy();
  if (auto src = policy.sources.find(kSource); src != policy.sources.end())
    for (const auto& [scope, row] : src->second.scopes)
      if (scope.rfind("chat:", 0) == 0 && scope.size() > 5) chats[scope.substr(5)] = false;
  for (const auto& [name, value] : cursors) {
    if (name.rfind("chat:", 0) != 0) continue;
    json c = ParseCursor(cursors, name);
    if (Bool(c, "direct")) chats[name.substr(5)] = true;
  }
  SourceUpdate u;
  u.source = kSource;
  u.path = "backfill";
  std::vector<std::string> failures;
  for (const auto& [chat, direct] : chats) {
    const std::string key = "chat:" + chat;
    json c = ParseCursor(cursors, key);
    if (c.is_null() || !c.contains("since")) {
      // First sight: nothing before now is read (SPEC §3.4).
      u.set_cursors[key] = json{{"since", now}, {"direct", direct}}.dump();
      spdlog::info("feishu chat cursor started chat={}", chat);
      continue;
    }
    const TimeMs since = Int(c, "since", now);
    const TimeMs read_start = clock_->NowMs();
    Intake intake;
    Status status = Status::Ok();
    auto items = client_->ListMessages("chat", chat, since / 1000, options_.max_pages);
    if (!items.ok()) status = items.status();
    const NormalizeContext ctx = Context();
    if (status.ok()) {
      for (const json& item : *items) {
        Normalized n = NormalizeHistoryItem(item, ctx, direct);
        // The listing starts at a whole second: what came before the cursor's millisecond was
        // read already, or (a chat seen first) came before the Source knew the chat (SPEC §3.4).
        if (n.kind == Normalized::Kind::kTrigger && n.trigger.at < since) continue;
        Receive(n, "backfill", &intake, report);
        if (!intake.error.empty()) break;
        // A topic root stands for its replies, which only the thread container returns.
        if (n.kind == Normalized::Kind::kTrigger) {
          const std::string tid = json_read::StringOr(n.trigger.meta, "thread_id");
          if (!tid.empty() && intake.threads_seen.insert(tid).second) {
            status = ReadThread(tid, since, direct, &intake, report);
            if (!status.ok()) break;
          }
        }
      }
      if (status.ok() && !intake.error.empty()) status = Status::Internal(intake.error);
    }
    u.skipped += intake.skipped;
    if (status.ok()) {
      if (report) ++report->chats_read;
      u.set_cursors[key] = json{{"since", read_start - options_.overlap_ms}, {"direct", direct}}.dump();
    } else {
      // The chat keeps its cursor; the error is its own, and the next round tries again.
      if (report) {
        ++report->chats_failed;
        report->errors.push_back(chat + ": " + status.message());
      }
      c["error"] = status.message();
      c["error_at"] = now;
      u.set_cursors[key] = c.dump();
      failures.push_back(chat + ": " + status.message());
      spdlog::warn("feishu backfill failed chat={} error=\"{}\"", chat, status.message());
    }
  }
  u.ok = failures.empty();
  for (const std::string& f : failures) u.error += (u.error.empty() ? "" : "; ") + f;
  if (Status s = Report(u); !s.ok()) spdlog::error("feishu backfill update failed: {}", s.ToString());
}

RoundReport Source::RunOnce() {
  return metrics::ObservedRound(kSource, clock_, [this] { return Round(); });
}

RoundReport Source::Round() {
  std::lock_guard<std::mutex> round(round_mu_);
  RoundReport report;
  ReportRefusedCallbacks();
  if (!EnsureIdentity(&report)) return report;
  Backfill(&report);
  PollThreads(&report);
  spdlog::debug("feishu round stored={} duplicate={} filtered={} skipped={} chats_failed={} threads_failed={}",
                report.stored, report.duplicate, report.filtered, report.skipped, report.chats_failed,
                report.threads_failed);
  return report;
}

Result<std::string> Source::HandleEvent(const json& envelope, const std::string& via) {
  return TakeEvent(envelope, via, /*may_fetch_identity=*/true);
}

Result<std::string> Source::TakeEvent(const json& envelope, const std::string& via, bool may_fetch_identity) {
  // v1 events and other shapes (a field of another type included) are not what this app
  // subscribes to; the event itself is checked by NormalizeEvent, which counts a bad one.
  if (json_read::StringOr(envelope, "schema") != "2.0" || !json_read::Object(envelope, "header").ok())
    return std::string("skipped");
  const std::string type = json_read::StringOr(envelope, "header.event_type");
  if (type != "im.message.receive_v1") return std::string("skipped");
  if (!(may_fetch_identity ? EnsureIdentity(nullptr) : AdoptStoredIdentity()))
    return Status::Unavailable("bot identity unknown; the event is refused for a retry");
  const json* event = json_read::Find(envelope, "event");
  Normalized n = NormalizeEvent(event != nullptr ? *event : json(), Context());
  Intake intake;
  RoundReport report;
  Receive(n, via, &intake, &report);
  SourceUpdate u;
  u.source = kSource;
  u.path = "realtime";
  u.skipped = intake.skipped;
  u.ok = intake.error.empty();
  u.error = intake.error;
  if (Status s = engine_->UpdateSource(u); !s.ok()) spdlog::error("feishu realtime update failed: {}", s.ToString());
  if (!intake.error.empty()) return Status::Internal(intake.error);
  if (intake.skipped) return std::string("skipped");
  const char* outcome = report.stored ? "stored" : report.duplicate ? "duplicate" : report.filtered ? "filtered" : "skipped";
  spdlog::info("feishu event via={} event_id={} trigger={} outcome={}", via, json_read::StringOr(envelope, "header.event_id"),
               n.kind == Normalized::Kind::kTrigger ? n.trigger.id : "", outcome);
  return std::string(outcome);
}

void Source::RecordRealtime(bool ok, const std::string& error) {
  SourceUpdate u;
  u.source = kSource;
  u.path = "realtime";
  u.ok = ok;
  u.error = error;
  if (Status s = Report(u); !s.ok()) spdlog::error("feishu realtime update failed: {}", s.ToString());
}

void Source::Start() {
  click_loop_.Start();
  if (poller_.Start()) spdlog::info("feishu source started interval_s={}", options_.poll_interval_ms / 1000);
}

void Source::Stop() {
  poller_.Stop();
  click_loop_.Stop();
}

namespace {

constexpr std::size_t kMaxQueuedClicks = 1000;

json Toast(const std::string& type, const std::string& content) {
  return json{{"toast", {{"type", type}, {"content", content}}}};
}

}  // namespace

json Source::TakeCardAction(const json& envelope, const std::string& via) {
  // Checked now with what is known without the Engine, so a refusal is said to the person at once;
  // the click is normalized again when taken, with the identity and the chat's kind.
  Normalized n = NormalizeCardAction(envelope, Context(), false);
  if (n.kind != Normalized::Kind::kTrigger) {
    spdlog::warn("feishu card action refused via={} reason=\"{}\"", via, n.why);
    return Toast("error", "Not taken: " + n.why);
  }
  {
    std::lock_guard<std::mutex> lock(clicks_mu_);
    if (clicks_.size() >= kMaxQueuedClicks) return Toast("error", "Busy; please press again in a moment");
    clicks_.emplace_back(envelope, via);
  }
  click_loop_.Wake();
  return Toast("success", "Answer recorded");
}

int Source::DrainCardActions() {
  std::deque<std::pair<json, std::string>> batch;
  {
    std::lock_guard<std::mutex> lock(clicks_mu_);
    batch.swap(clicks_);
  }
  if (batch.empty()) return 0;
  // Which chats are direct is in the cursors; unread, a direct chat's press would be taken as a
  // group's. The presses go back to the front of the queue for the loop's next pass.
  auto read = views_->SourceCursors(kSource);
  if (!read.ok()) {
    spdlog::error("feishu card actions not taken, cursors not read count={} error=\"{}\"", batch.size(),
                  read.status().message());
    std::lock_guard<std::mutex> lock(clicks_mu_);
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) clicks_.push_front(std::move(*it));
    return 0;
  }
  AdoptStoredIdentity();  // own clicks (the bot's) are told apart once its open_id is known
  const std::map<std::string, std::string>& cursors = *read;
  int taken = 0;
  for (const auto& [envelope, via] : batch) {
    const std::string chat = json_read::StringOr(envelope, "event.context.open_chat_id");
    const bool direct = Bool(ParseCursor(cursors, "chat:" + chat), "direct");
    Normalized n = NormalizeCardAction(envelope, Context(), direct);
    if (n.kind == Normalized::Kind::kTrigger && n.trigger.at <= 0) n.trigger.at = clock_->NowMs();
    Intake intake;
    RoundReport report;
    Receive(n, via, &intake, &report);
    SourceUpdate u;
    u.source = kSource;
    u.path = "realtime";
    u.skipped = intake.skipped;
    u.ok = intake.error.empty();
    u.error = intake.error;
    if (Status s = engine_->UpdateSource(u); !s.ok()) spdlog::error("feishu realtime update failed: {}", s.ToString());
    const char* outcome = report.stored ? "stored" : report.duplicate ? "duplicate" : report.filtered ? "filtered" : "skipped";
    spdlog::info("feishu card action via={} trigger={} actor={} outcome={}", via, n.trigger.id, n.trigger.actor.value_or(""),
                 outcome);
    if (intake.error.empty()) ++taken;
  }
  return taken;
}

void Source::RequestRound() { poller_.Wake(); }

}  // namespace superagent::feishu
