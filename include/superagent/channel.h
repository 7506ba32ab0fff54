// Channel: where the Effects loop delivers what the agent says or does (SPEC §8). One per
// platform (GitHub, Feishu); each makes a retried delivery safe on its own terms.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/domain.h"

namespace superagent {

// One pending external action, as the Effects loop hands it to a Channel.
struct Effect {
  std::int64_t id = 0;
  std::string kind;                  // "post_message", "open_pull_request", "add_reaction", ...
  std::optional<Receipt> receipt;    // set for "post_message": the message to deliver
  nlohmann::json payload;            // kind-specific arguments
  int attempts = 0;                  // earlier attempts (0 on the first)
};

struct Delivery {
  enum class Outcome {
    kDone,        // delivered (or found already delivered); external_id set when known
    kRetry,       // transient failure: try again after backoff (or retry_after_ms when set)
    kFailed,      // permanent failure (4xx other than rate limits): never retried
    kTargetGone,  // the discussion/chat no longer accepts messages (deleted, 410, bot removed)
  };
  Outcome outcome = Outcome::kRetry;
  std::string external_id;  // e.g. the GitHub comment id or Feishu message_id
  std::string error;        // for logs and the panel; never contains secrets
  TimeMs retry_after_ms = 0;  // a peer's own wait instruction (Retry-After), 0 when none
  std::string url;            // the web address of what was made (a pull request), "" when none

  static Delivery Done(std::string external_id) { return {Outcome::kDone, std::move(external_id), "", 0}; }
  static Delivery Retry(std::string error, TimeMs after = 0) { return {Outcome::kRetry, "", std::move(error), after}; }
  static Delivery Failed(std::string error) { return {Outcome::kFailed, "", std::move(error), 0}; }
  static Delivery Gone(std::string error) { return {Outcome::kTargetGone, "", std::move(error), 0}; }
};

// How long one message to a channel may be: the platform's rule (SPEC §1's word limit for chats,
// GitHub's character cap), said by the platform's own module and handed to the Engine by app/
// (EngineOptions::message_limit), so core knows no platform.
struct MessageLimit {
  // "" when `body` fits, else why not (the limit and the count, for whoever reads the refusal).
  std::function<std::string(const std::string& body)> too_long;
  // `body` cut to fit, visibly ("…"): for what must not be refused (an acknowledgement).
  std::function<std::string(const std::string& body)> cut;
};

class Channel {
 public:
  virtual ~Channel() = default;
  // True when this Channel delivers to `channel` (a Receipt's channel, e.g. "github:issue:42",
  // "feishu:chat:oc_1") — by prefix, typically.
  virtual bool Handles(const std::string& channel) const = 0;
  // Performs one Effect. `outcome_unknown` is true when an earlier attempt may have reached the
  // peer (the process died or the request timed out between sending and recording): the Channel
  // must then look for its own earlier delivery (GitHub: the hidden receipt marker; Feishu: the
  // same request uuid) before acting again, so nothing is ever posted twice.
  virtual Delivery Perform(const Effect& effect, bool outcome_unknown) = 0;
};

}  // namespace superagent
