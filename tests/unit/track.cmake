# tests/unit/track.cmake - Check suite of track/ (the recording core)
# unit.track is one program of four files (check_track.h); streams are read with
# tests/lib/check_decode.h (the independent decoder)
heaptap_unit_test(track LIBS heaptap_track
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_track_unwind.c
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_track_session.c
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_track_twice.c)
if(TARGET check_track)
  target_compile_definitions(check_track PRIVATE _GNU_SOURCE)
  # the walker test starts from its own frame pointer, like the hooks
  target_compile_options(check_track PRIVATE -fno-omit-frame-pointer)
  # under ASan its tree and session cases take 35-140 s alone on the shared 2-core
  # machine (its tree case most), and over 300 s beside
  # another test of `ctest -j2`: slow, not hung (each test has Check's 60-s limit)
  if(HEAPTAP_SANITIZE)
    set_tests_properties(unit.track PROPERTIES TIMEOUT 900)
  endif()
endif()
# foreign frames: the producer's splice point, the stack caches around it, the definition queue
heaptap_unit_test(track_xframe LIBS heaptap_track)
if(TARGET check_track_xframe)
  target_compile_definitions(check_track_xframe PRIVATE _GNU_SOURCE)
  target_compile_options(check_track_xframe PRIVATE -fno-omit-frame-pointer)
endif()
# WIRE_CTL_XFRAMES: one language's producer skipped, others not
heaptap_unit_test(track_xfctl LIBS heaptap_track)
if(TARGET check_track_xfctl)
  target_compile_definitions(check_track_xfctl PRIVATE _GNU_SOURCE)
endif()
