// The Effects loop (SPEC §8): performs what the outbox holds, in order, with retries, and
// records every outcome through the Engine. The only code that calls a platform's write API.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "superagent/channel.h"
#include "superagent/engine.h"
#include "superagent/periodic.h"
#include "superagent/secret_filter.h"

namespace superagent {

struct EffectsOptions {
  TimeMs message_backoff_start_ms = 5'000;   // channel messages: 5 s doubling …
  TimeMs message_backoff_max_ms = 300'000;   // … to 300 s (SPEC §6)
  TimeMs action_backoff_start_ms = 2'000;    // external actions: 2 s doubling …
  TimeMs action_backoff_max_ms = 60'000;     // … to 1 min
  double jitter = 0.2;                       // each delay is scaled by a random factor in [1-j, 1+j]
  int batch = 16;                            // Effects claimed per round
  TimeMs idle_wait_ms = 500;                 // the thread's wait when nothing is due
  // The outbound filter (issue 33): every string of an Effect — a message's body, a PR's title and
  // body, a check run's summary — passes it right before a Channel sees the Effect. Not owned;
  // null only in tests that do not look at secrets (the daemon always sets it).
  SecretFilter* secrets = nullptr;
};

// `effect` with every string the filter would replace replaced: the receipt's body and every
// string (keys too) of its payload. Records one event (path "outbox") naming the effect's kind,
// id, receipt and Ticket when anything was replaced. `secrets` null: unchanged.
Effect FilteredEffect(const Effect& effect, SecretFilter* secrets);

// The delay before retry number `attempt` (1 = after the first failure), without jitter.
TimeMs BackoffDelay(bool is_message, int attempt, const EffectsOptions& options);

class EffectsLoop {
 public:
  // `engine` and every channel must outlive the loop. `seed` makes jitter reproducible in tests.
  EffectsLoop(Engine* engine, std::vector<Channel*> channels, Clock* clock, EffectsOptions options = {},
              std::uint64_t seed = std::random_device{}());
  ~EffectsLoop();

  // Claims one batch of due Effects and performs them in order. Returns how many were performed.
  Result<int> RunOnce();
  // Runs RunOnce on a thread until Stop().
  void Start();
  // Stops claiming new work and waits for the Effect in flight (bounded by the channel's own HTTP
  // timeout). Whatever was not performed stays pending in the store for the next start.
  void Stop();
  // Wakes the thread early (e.g. right after something was enqueued).
  void Wake();

 private:
  Channel* ChannelFor(const ClaimedEffect& c) const;
  TimeMs RetryAt(const ClaimedEffect& c, const Delivery& d);

  Engine* engine_;
  std::vector<Channel*> channels_;
  Clock* clock_;
  EffectsOptions options_;
  std::mt19937_64 rng_;
  Periodic loop_;  // RunOnce again at once while it performs, else every idle_wait_ms; last member
};

}  // namespace superagent
