#include "panel/assets.h"

namespace superagent::panel {

const Asset* FindAsset(std::string_view path) {
  if (path == "/") path = "/index.html";
  for (const Asset& a : Assets())
    if (path == a.path) return &a;
  return nullptr;
}

}  // namespace superagent::panel
