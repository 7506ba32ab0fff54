// JSON shapes of the panel API (docs/005-panel.md). Only what a person needs to see; nothing
// here reads configuration, so no secret can reach a response through it.
#pragma once

#include <nlohmann/json.hpp>

#include "superagent/views.h"

namespace superagent::panel {

nlohmann::json TimeJson(std::optional<TimeMs> t);  // RFC 3339 or null
nlohmann::json TriggerJson(const TriggerRecord& r);
nlohmann::json TicketRowJson(const TicketRow& row);
nlohmann::json DecisionJson(const DecisionView& d);
nlohmann::json ProblemJson(const SystemProblem& p);
nlohmann::json SetAsideJson(const QuarantineItem& q);
nlohmann::json CommandJson(const CommandRecord& c);
nlohmann::json HealthJson(const SourceHealth& h);
// Everything about one Ticket, with a `transcript`: what reached it, what it sent and its stage
// changes, in time order.
nlohmann::json DetailJson(const TicketDetail& d);

}  // namespace superagent::panel
