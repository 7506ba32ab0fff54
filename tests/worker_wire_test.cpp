// Issue 36: the worker endpoints' JSON (worker_pool.h, "The wire"). A stranger's JSON is refused
// with the field's name, never thrown on; what is accepted round-trips byte for byte.
#include <gtest/gtest.h>

#include "superagent/worker_pool.h"

namespace superagent::exec {
namespace {

using nlohmann::json;

const std::string kLeaseId(64, 'a');

TEST(WorkerWire, AnAnnouncementRoundTripsAndAnythingElseIsRefusedByField) {
  const json good = {{"worker", "gpu-box_1.example"}, {"executors", {"claude-code", "codex"}}, {"slots", 4}};
  auto a = ParseAnnouncement(good);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->worker, "gpu-box_1.example");
  EXPECT_EQ(a->executors, (std::vector<std::string>{"claude-code", "codex"}));
  EXPECT_EQ(a->slots, 4);
  EXPECT_EQ(AnnouncementToJson(*a), good);

  const std::pair<json, std::string> bad[] = {
      {json::array(), "expected a JSON object"},
      {{{"executors", {"codex"}}, {"slots", 1}}, "\"worker\": missing"},
      {{{"worker", "工作机-😀"}, {"executors", {"codex"}}, {"slots", 1}}, "\"worker\""},
      {{{"worker", std::string(65, 'w')}, {"executors", {"codex"}}, {"slots", 1}}, "\"worker\""},
      {{{"worker", "a b"}, {"executors", {"codex"}}, {"slots", 1}}, "\"worker\""},
      {{{"worker", 7}, {"executors", {"codex"}}, {"slots", 1}}, "\"worker\": expected string"},
      {{{"worker", "w"}, {"executors", json::array()}, {"slots", 1}}, "\"executors\": 1 to 8"},
      {{{"worker", "w"}, {"executors", "codex"}, {"slots", 1}}, "\"executors\": expected array"},
      {{{"worker", "w"}, {"executors", {"codex", "codex"}}, {"slots", 1}}, "\"executors[1]\": named twice"},
      {{{"worker", "w"}, {"executors", {"Codex"}}, {"slots", 1}}, "\"executors[0]\""},
      {{{"worker", "w"}, {"executors", {1}}, {"slots", 1}}, "\"executors[0]\""},
      {{{"worker", "w"}, {"executors", json(std::vector<std::string>(9, "a"))}, {"slots", 1}}, "1 to 8"},
      {{{"worker", "w"}, {"executors", {"codex"}}, {"slots", 0}}, "\"slots\": 1 to 64"},
      {{{"worker", "w"}, {"executors", {"codex"}}, {"slots", 65}}, "\"slots\": 1 to 64"},
      {{{"worker", "w"}, {"executors", {"codex"}}, {"slots", "2"}}, "\"slots\": expected integer"},
      {{{"worker", "w"}, {"executors", {"codex"}}, {"slots", 2.5}}, "\"slots\": expected integer"},
  };
  for (const auto& [j, why] : bad) {
    auto r = ParseAnnouncement(j);
    ASSERT_FALSE(r.ok()) << j.dump();
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << j.dump() << " -> " << r.status().message();
  }
}

TEST(WorkerWire, ALeaseRoundTripsWithItsCodeByteForByte) {
  Lease lease;
  lease.id = kLeaseId;
  lease.offer = 3;
  lease.attempt = 2;
  lease.turn.assignment = 30;
  lease.turn.ticket = 7;
  lease.turn.executor = "claude-code";
  lease.turn.task = {{"request_text", "修一下 README 🙏"}, {"inputs", json::array()}};
  lease.turn.code = std::string("# v2 git bundle\n\0\xff\xfe PACK", 25);
  auto back = ParseLease(LeaseToJson(lease));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->id, lease.id);
  EXPECT_EQ(back->offer, 3);
  EXPECT_EQ(back->attempt, 2);
  EXPECT_EQ(back->turn.assignment, 30);
  EXPECT_EQ(back->turn.ticket, 7);
  EXPECT_EQ(back->turn.executor, "claude-code");
  EXPECT_EQ(back->turn.task, lease.turn.task);
  EXPECT_EQ(back->turn.code, lease.turn.code);

  auto refused = [&](const std::string& path, const json& value) {
    json j = LeaseToJson(lease);
    json* at = &j;
    std::size_t start = 0;
    for (std::size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1)
      at = &(*at)[path.substr(start, dot - start)];
    (*at)[path.substr(start)] = value;
    auto r = ParseLease(j);
    EXPECT_FALSE(r.ok()) << path << " = " << value.dump();
  };
  refused("lease", std::string(63, 'a'));
  refused("lease", std::string(64, 'A'));
  refused("lease", nullptr);
  refused("offer", 0);
  refused("attempt", "2");
  refused("turn.ticket", -1);
  refused("turn.executor", "../../bin/sh");
  refused("turn.task", json::array());
  refused("turn.code", "not base64!");
  refused("turn.code", 12);
  EXPECT_FALSE(ParseLease(json("a lease")).ok());
}

TEST(WorkerWire, AReturnNamesItsWorkerAndLeaseAndItsBundleStaysWithinTheLimit) {
  TurnReturn r;
  r.report = {{"stage", "ready"}, {"summary", "修好了 ✅"}};
  r.bundle = std::string("\0\x01\xff bundle", 10);
  const LeaseRef ref{"worker-a", kLeaseId};
  auto back = ParseTurnReturn(TurnReturnToJson(ref, r), 1000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->first.worker, "worker-a");
  EXPECT_EQ(back->first.lease, kLeaseId);
  EXPECT_EQ(back->second.report, r.report);
  EXPECT_EQ(back->second.bundle, r.bundle);

  // No report and no bundle: a turn that made nothing.
  auto empty = ParseTurnReturn({{"worker", "worker-a"}, {"lease", kLeaseId}, {"report", nullptr}}, 1000);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->second.report.is_null());
  EXPECT_EQ(empty->second.bundle, "");

  EXPECT_FALSE(ParseTurnReturn(TurnReturnToJson(ref, r), 9).ok()) << "10 bytes over a limit of 9";
  TurnReturn huge;
  huge.bundle = std::string(4000, 'x');
  auto over = ParseTurnReturn(TurnReturnToJson(ref, huge), 1000);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("over 1000 bytes"), std::string::npos);
  EXPECT_FALSE(ParseTurnReturn({{"worker", "worker-a"}, {"lease", kLeaseId}, {"report", "ready"}}, 1000).ok());
  EXPECT_FALSE(ParseTurnReturn({{"worker", "worker-a"}, {"lease", kLeaseId}, {"bundle", "%%%"}}, 1000).ok());
  EXPECT_FALSE(ParseTurnReturn({{"worker", "worker-a"}, {"lease", "x"}}, 1000).ok());
  EXPECT_FALSE(ParseTurnReturn({{"lease", kLeaseId}}, 1000).ok());
  EXPECT_FALSE(ParseLeaseRef(json::array()).ok());
  EXPECT_STREQ(LeaseStateName(LeaseState::kWithdrawn), "withdrawn");
}

TEST(WorkerWire, AJoinNamesItsWorkerAndCarriesAToken) {
  auto join = ParseJoin({{"worker", "gpu-box.01"}, {"join_token", "令牌-🙂-0123"}});
  ASSERT_TRUE(join.ok()) << join.status().ToString();
  EXPECT_EQ(join->worker, "gpu-box.01");
  EXPECT_EQ(join->join_token, "令牌-🙂-0123");
  const std::pair<json, std::string> bad[] = {
      {json("join"), "expected a JSON object"},
      {{{"join_token", "t"}}, "\"worker\": missing"},
      {{{"worker", "w/../x"}, {"join_token", "t"}}, "\"worker\""},
      {{{"worker", "w"}}, "\"join_token\": missing"},
      {{{"worker", "w"}, {"join_token", ""}}, "\"join_token\": 1 to 512"},
      {{{"worker", "w"}, {"join_token", std::string(513, 't')}}, "\"join_token\": 1 to 512"},
      {{{"worker", "w"}, {"join_token", json::array()}}, "\"join_token\": expected string"},
  };
  for (const auto& [j, why] : bad) {
    auto r = ParseJoin(j);
    ASSERT_FALSE(r.ok()) << j.dump();
    EXPECT_NE(r.status().message().find(why), std::string::npos) << j.dump() << " -> " << r.status().message();
  }
}

TEST(WorkerWire, StreamedEventsAreOnlyATurnsKindsWithinTheirLimits) {
  const std::vector<TurnEvent> events = {{"assistant", {{"role", "assistant"}, {"content", "读了 README ✅"}}},
                                         {"tool_result", {{"role", "tool"}, {"tool_call_id", "t1"}, {"content", ""}}},
                                         {"command", {{"command", "git diff"}, {"exit_code", 0}}}};
  auto p = ParseProgress(ProgressToJson(LeaseRef{"w", kLeaseId}, events));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->first.lease, kLeaseId);
  EXPECT_EQ(p->second, events);
  EXPECT_TRUE(ParseProgress({{"worker", "w"}, {"lease", kLeaseId}, {"events", json::array()}}).ok());

  auto with = [&](const json& list) { return json{{"worker", "w"}, {"lease", kLeaseId}, {"events", list}}; };
  const std::pair<json, std::string> bad[] = {
      {with(json::array({{{"kind", "report"}, {"body", json::object()}}})), "events[0].kind"},
      {with(json::array({{{"kind", "input"}, {"body", json::object()}}})), "events[0].kind"},
      {with(json::array({{{"kind", "assistant"}, {"body", "text"}}})), "body"},
      {with(json::array({"assistant"})), "events[0]\": expected an object"},
      {with(json::array({{{"kind", "command"}, {"body", {{"out", std::string(kMaxEventBytes, 'x')}}}}})), "events[0].body"},
      {with(json(std::vector<json>(kMaxEventsPerProgress + 1, {{"kind", "command"}, {"body", json::object()}}))),
       "at most 200"},
      {with("events"), "\"events\": expected array"},
      {{{"worker", "w"}, {"lease", "short"}, {"events", json::array()}}, "\"lease\""},
  };
  for (const auto& [j, why] : bad) {
    auto r = ParseProgress(j);
    ASSERT_FALSE(r.ok()) << j.dump().substr(0, 200);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace superagent::exec
