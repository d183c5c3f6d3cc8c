#pragma once
// A std::map that remembers the entry it found last. A bill's windows come a
// GPU at a time (a fleet's ragged end, a node's store), and the builders
// look each window's GPU up in maps of every GPU the range saw: at 8,000 GPUs
// that is a walk of 13 string comparisons, where the same GPU as the last
// lookup costs one (docs/performance.md, "A GPU's entries found once a run").
// std::map's nodes never move, and nothing here erases, so the remembered
// entry stays valid; a copy forgets it (it would point into the original).
#include <cstddef>
#include <map>
#include <utility>

namespace gpuledger {

template <typename Key, typename Value, typename Compare = std::less<Key>>
class RecentMap {
 public:
  using Map = std::map<Key, Value, Compare>;

  RecentMap() = default;
  RecentMap(const RecentMap& o) : map_(o.map_) {}
  RecentMap& operator=(const RecentMap& o) {
    if (this != &o) map_ = o.map_, last_ = nullptr;
    return *this;
  }
  RecentMap(RecentMap&& o) noexcept : map_(std::move(o.map_)), last_key_(std::move(o.last_key_)), last_(o.last_) {
    o.last_ = nullptr;  // the nodes moved with the map: the entry is this one's now
  }
  RecentMap& operator=(RecentMap&& o) noexcept {
    map_ = std::move(o.map_), last_key_ = std::move(o.last_key_), last_ = o.last_;
    o.last_ = nullptr;
    return *this;
  }

  // map[key], the last entry again when the key is the last one's. A new key
  // is most often past every other (the windows come in key order): tried at
  // the end first, one comparison, and placed by a walk of the tree if not.
  Value& operator[](const Key& key) {
    if (last_ == nullptr || last_key_ != key) {
      last_ = &map_.try_emplace(map_.end(), key)->second;
      last_key_ = key;
    }
    return *last_;
  }
  void clear() { map_.clear(), last_ = nullptr; }
  const Map& all() const { return map_; }
  bool empty() const { return map_.empty(); }
  std::size_t size() const { return map_.size(); }

 private:
  Map map_;
  Key last_key_{};
  Value* last_ = nullptr;
};

}  // namespace gpuledger
