// SPEC §1's rule for messages to a chat, in one place: one short summary of at most 100 words,
// counted by text::CountWords (each Chinese character is a word). The Engine enforces it for every
// message it enqueues (EngineOptions::chat_word_limit, which defaults to kChatWordLimit); the
// assessment prompt and its checker use it for acknowledgements.
#pragma once

#include <cstddef>
#include <string>

namespace superagent {

inline constexpr std::size_t kChatWordLimit = 100;

// True when `channel_or_source` is a chat: Feishu and the panel. It may be a Channel
// ("feishu:chat:oc_1", "panel:session:3") or a Source name ("feishu"). GitHub is not a chat.
bool IsChat(const std::string& channel_or_source);

}  // namespace superagent
