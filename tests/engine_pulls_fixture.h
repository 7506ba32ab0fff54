// An Engine test with a Ticket's pull request (SPEC §6): turns that end ready and open a PR, the
// outbox delivered as the daemon would, and the GitHub Triggers a PR's life brings (CI, closed).
// Shared by the pull-request tests and the outcome labels of issue 38.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {

class EnginePullsTest : public EngineTest {
 protected:
  void SetUp() override {
    options_.ci_fix_attempts = 2;
    EngineTest::SetUp();
  }
  // One whole turn of `t` ending ready, opening its PR when `open_pr`.
  void ReadyTurn(TicketId t, bool open_pr, const std::string& summary = "Fixed the typo.",
                 const std::string& pr_body = "") {
    const std::int64_t pending = PendingAssignment(t);
    ASSERT_NE(pending, 0);
    WorkspaceRecord w;
    w.ticket = t;
    w.dir = (dir_ / ("work-" + std::to_string(t))).string();
    w.branch = Branch(t);
    w.base = "origin/main";
    auto begun = engine_->BeginTurn(pending, "builtin", w);
    ASSERT_TRUE(begun.ok()) << begun.status().ToString();
    TurnEnd end;
    end.assignment = begun->assignment.id;
    end.reported = Stage::kReady;
    end.summary = summary;
    if (open_pr)
      end.actions.emplace_back("open_pull_request", nlohmann::json{{"channel", "github:acme/widgets"},
                                                         {"idempotency_key", "pr:ticket:" + std::to_string(t)},
                                                         {"ticket", t},
                                                         {"head", Branch(t)},
                                                         {"base", "main"},
                                                         {"title", "Fix the typo"},
                                                         {"body", pr_body}});
    ASSERT_TRUE(engine_->FinishTurn(end).ok());
  }
  static std::string Branch(TicketId t) { return "superagent/ticket-" + std::to_string(t); }
  // ou_alice's message `id` in chat oc_support, in topic `topic` when one is named.
  Trigger FeishuMessage(const std::string& id, const std::string& text, bool addressed = false, const std::string& topic = "") {
    Trigger f;
    f.id = "feishu:" + id;
    f.source = "feishu";
    f.scope = "chat:oc_support";
    f.actor = "ou_alice";
    f.human = true;
    f.addressed = addressed;
    f.text = text;
    f.at = clock_.NowMs();
    f.threads = {"feishu:chat:oc_support"};
    f.channel = "feishu:chat:oc_support:reply:" + id;
    f.meta = {{"chat_id", "oc_support"}, {"message_id", id}};
    if (!topic.empty()) {
      f.threads.insert(f.threads.begin(), "feishu:thread:" + topic);
      f.channel += ":thread";
      f.meta["thread_id"] = topic;
    }
    return f;
  }
  // Claims what is due and records each as `deliver` says; returns what was claimed.
  std::vector<ClaimedEffect> DeliverDue(const std::function<Delivery(const ClaimedEffect&)>& deliver) {
    auto claimed = Ok(engine_->ClaimDueEffects(20));
    for (const ClaimedEffect& c : claimed) EXPECT_TRUE(engine_->RecordDelivery(c.effect.id, deliver(c), 0).ok());
    return claimed;
  }
  static Delivery Sent(const ClaimedEffect& c) {
    if (c.effect.kind != "open_pull_request") return Delivery::Done("comment-1");
    Delivery d = Delivery::Done("42");
    d.url = "https://github.com/o/r/pull/42";
    return d;
  }
  // Opens Ticket 1's PR #42 the way the daemon does; returns the Ticket.
  TicketId TicketWithPull() {
    TicketId t = AcceptedTicket("c1");
    ReadyTurn(t, true);
    DeliverDue(Sent);  // the acknowledgement and the PR
    DeliverDue(Sent);  // the result, now that it knows its PR
    return t;
  }
  Trigger Ci(const std::string& id, TicketId t, const std::string& conclusion, const std::string& sha) {
    Trigger c;
    c.id = id;
    c.source = "github";
    c.scope = "ci";
    c.text = "CI: check \"test\" on " + Branch(t) + " (" + sha + ") finished: " + conclusion;
    c.at = clock_.NowMs();
    c.threads = {"github:acme/widgets:ci:" + Branch(t)};
    c.channel = "github:acme/widgets:commit:" + sha;
    c.meta = {{"type", "check_run"}, {"conclusion", conclusion}, {"head_sha", sha}, {"branch", Branch(t)}};
    return c;
  }
  Trigger Closed(const std::string& id, bool merged, const std::string& by) {
    Trigger c;
    c.id = id;
    c.source = "github";
    c.scope = "pulls";
    c.actor = by;
    c.human = true;
    c.text = std::string("Pull request #42 was ") + (merged ? "merged" : "closed") + " by " + by + ".";
    c.at = clock_.NowMs();
    c.threads = {"github:acme/widgets:pull:42"};
    c.channel = "github:acme/widgets:pull:42";
    c.meta = {{"type", "pull_request_closed"}, {"number", 42}, {"merged", merged}};
    return c;
  }
  // bob's comment `id` on issue `number`.
  Trigger IssueComment(const std::string& id, std::int64_t number, const std::string& text) {
    Trigger c;
    c.id = "github:comment:" + id;
    c.source = "github";
    c.scope = "comments";
    c.actor = "bob";
    c.human = true;
    c.text = text;
    c.at = clock_.NowMs();
    c.threads = {"github:acme/widgets:issue:" + std::to_string(number)};
    c.channel = "github:acme/widgets:issue:" + std::to_string(number);
    return c;
  }
  std::string LastInputState(TicketId t) { return Ok(views_->TicketInputs(t)).back().state; }
};

}  // namespace superagent::testing
