// Issue 36, item 3: the leases of turns run on other machines (include/superagent/worker_pool.h).
// Time is a FakeClock: a lease expires when the test says time has passed, never by waiting.
// Whatever the workers do — die, hang, come back late, use another's lease, race each other — a
// turn gets at most one result, and its offerer learns which.
#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "superagent/clock.h"
#include "superagent/worker_pool.h"

namespace superagent::exec {
namespace {

using nlohmann::json;

constexpr TimeMs kLeaseMs = 30'000;

OfferedTurn Turn(TicketId ticket, const std::string& executor = "claude-code") {
  OfferedTurn t;
  t.assignment = ticket * 10;
  t.ticket = ticket;
  t.executor = executor;
  t.task = {{"request_text", "修一下 README 的错别字 🙏"}, {"ticket", ticket}};
  return t;
}

TurnReturn Done(const std::string& summary) {
  TurnReturn r;
  r.report = {{"stage", "ready"}, {"summary", summary}};
  r.bundle = std::string("# v2 git bundle\n\0\xff", 18);
  return r;
}

class WorkerPoolTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  WorkerPool pool_{WorkerPool::Options{kLeaseMs}, &clock_};

  Lease MustClaim(const std::string& worker) {
    auto claimed = pool_.Claim(worker);
    EXPECT_TRUE(claimed.ok()) << claimed.status().ToString();
    EXPECT_TRUE(claimed.ok() && claimed->has_value()) << worker << " got nothing";
    return claimed.ok() && claimed->has_value() ? **claimed : Lease{};
  }
  OfferOutcome OutcomeOf(std::int64_t offer) {
    auto o = pool_.Outcome(offer);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? *o : OfferOutcome{};
  }
};

TEST_F(WorkerPoolTest, AClaimedTurnIsReturnedOnceWithWhatTheWorkerSent) {
  const std::int64_t offer = pool_.Offer(Turn(1));
  pool_.Announce("worker-a", {"claude-code"}, 2);
  const Lease lease = MustClaim("worker-a");
  EXPECT_EQ(lease.offer, offer);
  EXPECT_EQ(lease.attempt, 1);
  EXPECT_EQ(lease.turn.ticket, 1);
  EXPECT_EQ(lease.turn.task["request_text"], "修一下 README 的错别字 🙏");
  ASSERT_EQ(lease.id.size(), 64u);
  EXPECT_EQ(lease.id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(OutcomeOf(offer).kind, OfferOutcome::Kind::kWaiting);

  ASSERT_TRUE(pool_.Return("worker-a", lease.id, Done("fixed")).ok());
  const OfferOutcome out = OutcomeOf(offer);
  EXPECT_EQ(out.kind, OfferOutcome::Kind::kReturned);
  EXPECT_EQ(out.worker, "worker-a");
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(out.returned.report["summary"], "fixed");
  EXPECT_EQ(out.returned.bundle, Done("").bundle) << "the bundle's bytes, NUL and all";

  // A replayed return (the same message sent twice) is refused and changes nothing.
  EXPECT_EQ(pool_.Return("worker-a", lease.id, Done("again")).code(), Status::Code::kConflict);
  EXPECT_EQ(OutcomeOf(offer).returned.report["summary"], "fixed");
  EXPECT_EQ(pool_.Heartbeat("worker-a", lease.id), LeaseState::kLost) << "a returned turn is not held";
  pool_.Forget(offer);
  EXPECT_EQ(pool_.Outcome(offer).status().code(), Status::Code::kNotFound);
}

TEST_F(WorkerPoolTest, AWorkerClaimsOnlyWhatItsExecutorsRunAndNoMoreThanItsSlots) {
  pool_.Offer(Turn(1, "codex"));
  pool_.Offer(Turn(2, "claude-code"));
  pool_.Offer(Turn(3, "claude-code"));
  EXPECT_EQ(pool_.Claim("stranger").status().code(), Status::Code::kInvalidArgument) << "never announced";
  pool_.Announce("worker-a", {"claude-code"}, 1);
  const Lease first = MustClaim("worker-a");
  EXPECT_EQ(first.turn.ticket, 2) << "the oldest it can run; the codex turn is not for it";
  auto full = pool_.Claim("worker-a");
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full->has_value()) << "one slot, one lease";
  pool_.Announce("worker-b", {"codex", "claude-code"}, 4);
  EXPECT_EQ(MustClaim("worker-b").turn.ticket, 1);
  EXPECT_EQ(MustClaim("worker-b").turn.ticket, 3);
  auto none = pool_.Claim("worker-b");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value()) << "nothing left";

  const PoolView view = pool_.View();
  EXPECT_TRUE(view.queued.empty());
  ASSERT_EQ(view.workers.size(), 2u);
  EXPECT_EQ(view.workers[0].id, "worker-a");
  EXPECT_EQ(view.workers[0].leases, std::vector<std::string>{"ticket-2"});
  EXPECT_EQ(view.workers[1].leases, (std::vector<std::string>{"ticket-1", "ticket-3"}));
}

TEST_F(WorkerPoolTest, HeartbeatsKeepALeaseAndSilenceLosesIt) {
  const std::int64_t offer = pool_.Offer(Turn(1));
  pool_.Announce("worker-a", {"claude-code"}, 1);
  const Lease lease = MustClaim("worker-a");
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(kLeaseMs - 1);
    EXPECT_EQ(pool_.ExpireLeases(), 0);
    EXPECT_EQ(pool_.Heartbeat("worker-a", lease.id), LeaseState::kHeld);
  }
  clock_.Advance(kLeaseMs);
  EXPECT_EQ(pool_.ExpireLeases(), 1);
  EXPECT_EQ(pool_.ExpireLeases(), 0) << "expired once";
  EXPECT_EQ(pool_.Heartbeat("worker-a", lease.id), LeaseState::kLost);
  EXPECT_EQ(pool_.View().queued.at("claude-code"), 1) << "offered again";
  EXPECT_EQ(OutcomeOf(offer).kind, OfferOutcome::Kind::kWaiting);
}

// A worker killed (or cut off) mid-turn: its lease expires, another worker takes the turn from
// the start, and when the first comes back its return is refused. One result.
TEST_F(WorkerPoolTest, AnExpiredLeaseIsOfferedAgainAndTheLateReturnIsRefused) {
  const std::int64_t offer = pool_.Offer(Turn(7));
  pool_.Announce("worker-a", {"claude-code"}, 1);
  pool_.Announce("worker-b", {"claude-code"}, 1);
  const Lease lost = MustClaim("worker-a");
  clock_.Advance(kLeaseMs);
  ASSERT_EQ(pool_.ExpireLeases(), 1);
  const Lease second = MustClaim("worker-b");
  EXPECT_EQ(second.offer, offer);
  EXPECT_EQ(second.attempt, 2);
  EXPECT_NE(second.id, lost.id) << "a new lease, not the old one handed on";

  EXPECT_EQ(pool_.Return("worker-a", lost.id, Done("late")).code(), Status::Code::kConflict);
  EXPECT_EQ(OutcomeOf(offer).kind, OfferOutcome::Kind::kWaiting) << "the late return recorded nothing";
  ASSERT_TRUE(pool_.Return("worker-b", second.id, Done("on time")).ok());
  const OfferOutcome out = OutcomeOf(offer);
  EXPECT_EQ(out.worker, "worker-b");
  EXPECT_EQ(out.attempts, 2);
  EXPECT_EQ(out.returned.report["summary"], "on time");
}

TEST_F(WorkerPoolTest, NoWorkerCanUseAnothersLeaseOrAMadeUpOne) {
  const std::int64_t offer = pool_.Offer(Turn(1));
  pool_.Announce("worker-a", {"claude-code"}, 1);
  pool_.Announce("worker-b", {"claude-code"}, 1);
  const Lease lease = MustClaim("worker-a");
  EXPECT_EQ(pool_.Heartbeat("worker-b", lease.id), LeaseState::kLost);
  EXPECT_EQ(pool_.Return("worker-b", lease.id, Done("stolen")).code(), Status::Code::kConflict);
  for (const std::string& forged : {std::string(), std::string(64, '0'), lease.id.substr(0, 63), lease.id + "0",
                                    std::string("租约-😀\xff\xfe"), std::string(1 << 20, 'a')}) {
    EXPECT_EQ(pool_.Heartbeat("worker-a", forged), LeaseState::kLost);
    EXPECT_EQ(pool_.Return("worker-a", forged, Done("forged")).code(), Status::Code::kConflict);
  }
  EXPECT_EQ(pool_.Heartbeat("worker-a", lease.id), LeaseState::kHeld) << "the real holder is untouched";
  EXPECT_EQ(OutcomeOf(offer).kind, OfferOutcome::Kind::kWaiting);
}

// A person's Stop (or the turn's time limit) reaches a remote turn at its next heartbeat; what it
// sends afterwards is refused.
TEST_F(WorkerPoolTest, AWithdrawnTurnTellsItsHolderToStopAndRefusesItsReturn) {
  const std::int64_t offer = pool_.Offer(Turn(1));
  const std::int64_t unclaimed = pool_.Offer(Turn(2));
  pool_.Announce("worker-a", {"claude-code"}, 1);
  const Lease lease = MustClaim("worker-a");
  pool_.Withdraw(offer, "stopped by alice");
  pool_.Withdraw(unclaimed, "stopped by bob");
  EXPECT_EQ(pool_.Heartbeat("worker-a", lease.id), LeaseState::kWithdrawn);
  const Status refused = pool_.Return("worker-a", lease.id, Done("too late"));
  EXPECT_EQ(refused.code(), Status::Code::kConflict);
  EXPECT_NE(refused.message().find("stopped by alice"), std::string::npos) << refused.message();
  EXPECT_EQ(OutcomeOf(offer).kind, OfferOutcome::Kind::kWithdrawn);
  pool_.Withdraw(offer, "again");  // no-op
  EXPECT_EQ(OutcomeOf(unclaimed).kind, OfferOutcome::Kind::kWithdrawn);
  auto next = pool_.Claim("worker-a");
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value()) << "a withdrawn turn is never leased";
  EXPECT_TRUE(pool_.View().queued.empty());
}

// The offerer's wait ends when a worker returns (no polling of the clock is needed for that).
TEST_F(WorkerPoolTest, TheOfferersWaitEndsWhenTheTurnIsReturned) {
  const std::int64_t offer = pool_.Offer(Turn(1));
  pool_.Announce("worker-a", {"claude-code"}, 1);
  const Lease lease = MustClaim("worker-a");
  std::thread worker([&] { ASSERT_TRUE(pool_.Return("worker-a", lease.id, Done("done")).ok()); });
  while (OutcomeOf(offer).kind == OfferOutcome::Kind::kWaiting) pool_.WaitForChange(offer, 60'000);
  worker.join();
  EXPECT_EQ(OutcomeOf(offer).kind, OfferOutcome::Kind::kReturned);
}

// Eight workers racing for forty turns, each returning twice and heartbeating others' leases:
// every turn is leased once and returned once.
TEST_F(WorkerPoolTest, RacingWorkersGetEachTurnOnceAndOneResultEach) {
  constexpr int kTurns = 40;
  std::vector<std::int64_t> offers;
  for (int i = 1; i <= kTurns; ++i) offers.push_back(pool_.Offer(Turn(i)));
  std::atomic<int> accepted{0};
  std::mutex seen_mu;
  std::set<std::string> lease_ids;
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&, w] {
      const std::string name = "worker-" + std::to_string(w);
      pool_.Announce(name, {"claude-code"}, 3);
      for (;;) {
        auto claimed = pool_.Claim(name);
        if (!claimed.ok() || !claimed->has_value()) break;
        const Lease& lease = **claimed;
        {
          std::lock_guard<std::mutex> lock(seen_mu);
          EXPECT_TRUE(lease_ids.insert(lease.id).second) << "a lease id came twice";
        }
        EXPECT_EQ(pool_.Heartbeat("worker-" + std::to_string((w + 1) % 8), lease.id), LeaseState::kLost);
        if (pool_.Return(name, lease.id, Done(name)).ok()) ++accepted;
        EXPECT_FALSE(pool_.Return(name, lease.id, Done(name)).ok());
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(accepted.load(), kTurns);
  EXPECT_EQ(lease_ids.size(), static_cast<std::size_t>(kTurns));
  for (std::int64_t offer : offers) {
    const OfferOutcome out = OutcomeOf(offer);
    EXPECT_EQ(out.kind, OfferOutcome::Kind::kReturned);
    EXPECT_EQ(out.attempts, 1);
    EXPECT_EQ(out.returned.report["summary"], out.worker);
  }
}

}  // namespace
}  // namespace superagent::exec
