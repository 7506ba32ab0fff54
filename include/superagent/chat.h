// SPEC §1's rule for messages to a chat, in one place: one short summary of at most 100 words,
// counted by text::CountWords (each Chinese character is a word). The Engine enforces it for every
// message it enqueues to a chat through the rule app/ hands it (app::ChatMessageLimit, set in
// EngineOptions::message_limit); the assessment prompt and its checker use it for acknowledgements.
#pragma once

#include <cstddef>
#include <string>

namespace superagent {

inline constexpr std::size_t kChatWordLimit = 100;

// True when `channel_or_source` is a chat: Feishu and the panel. It may be a Channel
// ("feishu:chat:oc_1", "panel:session:3") or a Source name ("feishu"). GitHub is not a chat.
bool IsChat(const std::string& channel_or_source);

// SPEC §1's rule for one chat message: "" when `body` has at most `max_words` words
// (text::CountWords, so each Chinese character is a word), else why not, with the count.
std::string ChatTooLong(const std::string& body, std::size_t max_words = kChatWordLimit);

}  // namespace superagent
