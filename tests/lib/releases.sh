# Released versions built from git beside this tree, for benches that compare them
# (release_ab.sh, floor_statements.sh). Source after common.sh, with $dir set (tk_workdir).
#
# tk_build_release COMMIT VERSION: builds COMMIT's extension into a copy of PostgreSQL's tree
# under $dir/VERSION (the same server binaries, which find their extension directory relative to
# themselves, so the system's keeps this tree's) and its worker with CMake. Sets
# TK_RELEASE_PATH (a PATH whose pg_config and server are that copy's) and TK_RELEASE_WORKER.
tk_build_release() {
  local commit=$1 v=$2 d="$dir/$2"
  echo "== building $commit ($v): extension and worker"
  mkdir -p "$d/src" "$d/pg/usr/lib/postgresql" "$d/pg/usr/share/postgresql" "$d/pg/usr/include"
  git -C "$TK_ROOT" archive "$commit" | tar -x -C "$d/src" || { echo "no commit $commit in $TK_ROOT"; return 1; }
  # (Debian's layout: /usr/lib/postgresql/15/{bin,lib}, /usr/share/postgresql/15, /usr/include/postgresql.)
  cp -a "$(pg_config --bindir)/.." "$d/pg/usr/lib/postgresql/15"
  cp -a "$(pg_config --sharedir)" "$d/pg/usr/share/postgresql/15"
  ln -s "$(dirname "$(dirname "$(pg_config --includedir-server)")")" "$d/pg/usr/include/postgresql"
  rm -f "$d"/pg/usr/share/postgresql/15/extension/tweetkeeper* "$d"/pg/usr/lib/postgresql/15/lib/tweetkeeper.so
  TK_RELEASE_PATH="$d/pg/usr/lib/postgresql/15/bin:$PATH"
  [ "$(PATH=$TK_RELEASE_PATH pg_config --sharedir)" = "$d/pg/usr/share/postgresql/15" ] ||
    { echo "pg_config is not relocatable"; return 1; }
  { PATH=$TK_RELEASE_PATH make -C "$d/src" TK_PGXS=1 -j2 install &&
    cmake -S "$d/src" -B "$d/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$d/build" --target tweetkeeper-worker -j2; } >"$d/build.log" 2>&1 ||
    { tail -n 30 "$d/build.log"; return 1; }
  TK_RELEASE_WORKER="$d/build/worker/tweetkeeper-worker"
}
