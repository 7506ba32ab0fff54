#include "panel/workers.h"

#include <algorithm>
#include <set>
#include <vector>

#include "panel/panel_json.h"

namespace superagent::panel {

using nlohmann::json;

bool IsWorkerName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

json WorkersJson(const std::optional<exec::PoolView>& pool, TimeMs now) {
  if (!pool) return {{"enabled", false}};
  json workers = json::array();
  for (const exec::PoolWorker& w : pool->workers)
    workers.push_back({{"id", w.id},
                       {"executors", w.executors},
                       {"slots", w.slots},
                       {"leases", w.leases},
                       {"last_seen", TimeJson(w.last_seen)},
                       {"last_seen_ms", w.last_seen},
                       {"seconds_since_seen", std::max<TimeMs>(0, now - w.last_seen) / 1000}});
  return {{"enabled", true},
          {"queued", json(pool->queued)},
          {"running", json(pool->running)},
          {"free_slots", json(pool->free_slots)},
          {"workers", workers}};
}

std::string PoolFingerprint(const std::optional<exec::PoolView>& pool) {
  if (!pool) return "off";
  json j = WorkersJson(pool, 0);
  for (json& w : j["workers"]) {
    w.erase("last_seen");
    w.erase("last_seen_ms");
    w.erase("seconds_since_seen");
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::map<std::string, TimeMs> UnservedWatch::Update(const std::optional<exec::PoolView>& pool, TimeMs now) {
  std::set<std::string> offered, unserved;
  if (pool) {
    for (const exec::PoolWorker& w : pool->workers) offered.insert(w.executors.begin(), w.executors.end());
    for (const auto& [executor, n] : pool->queued)
      if (n > 0 && !offered.count(executor)) unserved.insert(executor);
  }
  MutexLock lock(&mu_);
  std::map<std::string, TimeMs> due;
  for (auto it = since_.begin(); it != since_.end();)
    it = unserved.count(it->first) ? std::next(it) : since_.erase(it);
  for (const std::string& executor : unserved) {
    const TimeMs since = since_.emplace(executor, now).first->second;
    if (now - since >= kUnservedAfterMs) due[executor] = since;
  }
  return due;
}

json UnservedCardJson(const std::map<std::string, TimeMs>& unserved, const exec::PoolView& pool) {
  if (unserved.empty()) return nullptr;
  json executors = json::array();
  std::string names;
  int turns = 0;
  TimeMs since = 0;
  for (const auto& [executor, at] : unserved) {
    auto q = pool.queued.find(executor);
    const int n = q == pool.queued.end() ? 0 : q->second;
    turns += n;
    since = since == 0 ? at : std::min(since, at);
    names += (names.empty() ? "" : ", ") + executor;
    executors.push_back({{"executor", executor}, {"queued", n}, {"since", TimeJson(at)}});
  }
  const bool one = unserved.size() == 1;
  return {{"since", TimeJson(since)},
          {"executors", executors},
          {"what", std::to_string(turns) + (turns == 1 ? " turn is" : " turns are") + " waiting for " + names +
                       ", which no connected worker offers."},
          {"fix", "Start a worker that offers " + names +
                      " (`superagent worker --config worker.yaml`, with " + (one ? "it" : "them") +
                      " under executors: config/worker.example.yaml; docs/007-operations.md, \"Workers on other "
                      "machines\"). A worker that runs but is not listed under Workers cannot reach the daemon's "
                      "workers.listen, or its join token is refused: its log says which."}};
}

}  // namespace superagent::panel
