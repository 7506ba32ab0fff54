// Files from web/, embedded at build time (cmake/EmbedWeb.cmake).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace superagent::panel {

struct Asset {
  const char* path;          // "/index.html"
  const char* content_type;  // "text/html; charset=utf-8"
  const unsigned char* data;
  std::size_t size;
};

// Every embedded file, sorted by path.
const std::vector<Asset>& Assets();

// The asset served for a request path ("/" means "/index.html"), or nullptr.
const Asset* FindAsset(std::string_view path);

}  // namespace superagent::panel
