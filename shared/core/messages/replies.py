"""What the people concerned are told directly, in English and Japanese: the owner's direct messages (dm.*),
the answers to whoever asked (reply.*, through response_url), and how an error is put to them (error.*).
"""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

REPLIES: Final[dict[str, dict[Lang, str]]] = {
    # ---- direct messages to the owner --------------------------------------------------------
    "dm.restarted": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}. "
        "I restarted the instance and it is back: reload the JupyterLab tab (if it still shows an error, "
        "give it a minute). Anything that was only in memory is lost.\n{advice}",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process} が強制終了されました。"
        "インスタンスを再起動し、復帰しました。JupyterLab のタブを再読み込みしてください (まだエラーが出る場合は"
        "1 分ほどお待ちください)。メモリ上にしかなかったデータは失われています。\n{advice}",
    },
    "dm.restart_unconfirmed": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}. "
        "I restarted the instance but could not see it come back. If JupyterLab still shows an error in a "
        "few minutes, the organizers know and will look at it.\n{advice}",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process} が強制終了されました。"
        "インスタンスを再起動しましたが、復帰を確認できていません。数分後も JupyterLab にエラーが出る場合は、"
        "運営に連絡済みですので対応をお待ちください。\n{advice}",
    },
    "dm.restart_failed": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}. "
        "I tried to restart the instance, but the restart failed ({error}). The organizers have been told "
        "and will look at it.",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process} が強制終了されました。"
        "インスタンスの再起動を試みましたが失敗しました ({error})。運営に連絡済みですので対応をお待ちください。",
    },
    # ---- the owner, about an outage the health sweep found (issue 42): no kill, so no memory advice
    "dm.sweep_restarted": {
        "en": "Your notebook *{instance}* was down at {time} ({cause}). I restarted the instance and it is back: "
        "reload the JupyterLab tab (if it still shows an error, give it a minute). Anything that was only in memory "
        "is lost; your files are kept.",
        "ja": "ノートブック *{instance}* が {time} に停止していました ({cause})。インスタンスを再起動し、復帰しました。"
        "JupyterLab のタブを再読み込みしてください (まだエラーが出る場合は 1 分ほどお待ちください)。"
        "メモリ上にしかなかったデータは失われていますが、ファイルは残っています。",
    },
    "dm.sweep_restart_unconfirmed": {
        "en": "Your notebook *{instance}* was down at {time} ({cause}). I restarted the instance but could not see "
        "it come back. If JupyterLab still shows an error in a few minutes, the organizers know and will look at it.",
        "ja": "ノートブック *{instance}* が {time} に停止していました ({cause})。インスタンスを再起動しましたが、"
        "復帰を確認できていません。数分後も JupyterLab にエラーが出る場合は、運営に連絡済みですので対応をお待ちください。",
    },
    "dm.sweep_restart_failed": {
        "en": "Your notebook *{instance}* was down at {time} ({cause}). I tried to restart the instance, but the "
        "restart failed ({error}). The organizers have been told and will look at it.",
        "ja": "ノートブック *{instance}* が {time} に停止していました ({cause})。インスタンスの再起動を試みましたが"
        "失敗しました ({error})。運営に連絡済みですので対応をお待ちください。",
    },
    "dm.sweep_paused": {
        "en": "Your notebook *{instance}* keeps going down ({count} restarts in {window}), and not from running out "
        "of memory. I stopped restarting it automatically and asked the organizers to look.",
        "ja": "ノートブック *{instance}* が停止を繰り返しています ({window} で {count} 回再起動、メモリ不足以外の原因)。"
        "自動再起動を止め、運営に確認を依頼しました。",
    },
    "dm.restarted_for_you": {
        "en": "{who} restarted your notebook *{instance}* at {time}. Reload the JupyterLab tab; anything that "
        "was only in memory is lost.",
        "ja": "{who} がノートブック *{instance}* を {time} に再起動しました。JupyterLab のタブを再読み込みしてください。"
        "メモリ上にしかなかったデータは失われています。",
    },
    "dm.started_for_you": {
        "en": "{who} started your notebook *{instance}* at {time}. Reload its JupyterLab tab.",
        "ja": "{who} がノートブック *{instance}* を {time} に起動しました。JupyterLab のタブを再読み込みしてください。",
    },
    "dm.stopped_for_you_open": {
        "en": "{who} stopped your notebook *{instance}* at {time}. Anything that was only in memory is lost; "
        "when you need it again, `/restart-notebook` starts it.",
        "ja": "{who} がノートブック *{instance}* を {time} に停止しました。メモリ上にしかなかったデータは失われています。"
        "必要になったら `/restart-notebook` で起動できます。",
    },
    "dm.stopped_for_you": {
        "en": "{who} stopped your notebook *{instance}* at {time}. Anything that was only in memory is lost; "
        "ask the organizers if you need it started again.",
        "ja": "{who} がノートブック *{instance}* を {time} に停止しました。メモリ上にしかなかったデータは失われています。"
        "再び起動する必要があれば運営に相談してください。",
    },
    "dm.stopping_for_you": {
        "en": "{who} is stopping your notebook *{instance}* (since {time}). Anything that is only in memory will be "
        "lost; ask the organizers if you need it started again.",
        "ja": "{who} がノートブック *{instance}* を停止しています ({time} から)。メモリ上にしかないデータは失われます。"
        "再び起動する必要があれば運営に相談してください。",
    },
    "dm.paused": {
        "en": "Your notebook *{instance}* keeps running out of memory ({count} restarts in {window}). "
        "I stopped restarting it automatically and asked the organizers to look; until they do, "
        "`/restart-notebook` can't restart it either.\n{advice}",
        "ja": "ノートブック *{instance}* がメモリ不足を繰り返しています ({window} で {count} 回再起動)。"
        "自動再起動を止め、運営に確認を依頼しました。確認が済むまでは `/restart-notebook` でも再起動できません。\n{advice}",
    },
    "dm.crash_loop_unpaused": {
        "en": "Your notebook *{instance}* keeps running out of memory ({count} restarts in {window}). "
        "I did not restart it this time and asked the organizers to look; until they do, `/restart-notebook` "
        "still restarts it if you need it.\n{advice}",
        "ja": "ノートブック *{instance}* がメモリ不足を繰り返しています ({window} で {count} 回再起動)。"
        "今回は再起動せず、運営に確認を依頼しました。それまでの間も、必要なら `/restart-notebook` で再起動できます。\n{advice}",
    },
    "dm.advice": {
        "en": "Tips: read large files in chunks (`pd.read_csv(..., chunksize=...)`, `usecols`, smaller `dtype`s "
        "such as float32), `del` big objects and call `gc.collect()`, work on a sample while exploring, "
        "and save intermediate results to disk. Need more memory? Ask the organizers.",
        "ja": "ヒント: 大きなファイルは分割して読み込む (`pd.read_csv(..., chunksize=...)`、`usecols`、"
        "float32 など小さい `dtype`)、不要な大きいオブジェクトは `del` して `gc.collect()`、"
        "探索中はサンプルで作業し、途中結果はディスクに保存しましょう。メモリが足りない場合は運営にご相談ください。",
    },
    # ---- answers to the requester (response_url) ---------------------------------------------
    "reply.started": {
        "en": ":white_check_mark: *{instance}* is running again (started in {seconds} s). Reload its JupyterLab tab; "
        "your files are as you left them, what was only in memory is not.",
        "ja": ":white_check_mark: *{instance}* が起動しました ({seconds} 秒)。JupyterLab のタブを再読み込みしてください。"
        "ファイルはそのままですが、メモリ上のデータは残っていません。",
    },
    "reply.start_unconfirmed": {
        "en": ":hourglass_flowing_sand: *{instance}* is still starting after {seconds} s. Try its tab in a minute or "
        "two; if it isn't up by then, run `/restart-notebook` again.",
        "ja": ":hourglass_flowing_sand: *{instance}* は {seconds} 秒たってもまだ起動中です。1〜2 分後にタブを確認し、"
        "起動していなければもう一度 `/restart-notebook` を実行してください。",
    },
    "reply.start_failed": {
        "en": ":x: Workbench refused to start *{instance}*: {error}. Nothing was changed; ask an organizer.",
        "ja": ":x: Workbench が *{instance}* の起動を拒否しました: {error}。何も変更していません。運営に相談してください。",
    },
    "reply.not_started": {
        "en": ":arrow_forward: *{instance}* was not started: it is {state}. Try again in a minute.",
        "ja": ":arrow_forward: *{instance}* は起動しませんでした: {state} 状態です。1 分後にもう一度お試しください。",
    },
    "reply.start_held": {
        "en": ":no_entry: *{instance}* was not started: the organizers stopped it, and only they can start it "
        "again. Ask one of them if you need it.",
        "ja": ":no_entry: *{instance}* は起動しませんでした: 運営が停止したため、再開できるのは運営だけです。"
        "必要な場合は運営に相談してください。",
    },
    "reply.already_running": {
        "en": ":white_check_mark: *{instance}* is running already: reload its JupyterLab tab.",
        "ja": ":white_check_mark: *{instance}* はすでに起動しています。JupyterLab のタブを再読み込みしてください。",
    },
    "reply.restarted": {
        "en": ":white_check_mark: *{instance}* was restarted in {seconds} s. JupyterLab will be back in a moment.",
        "ja": ":white_check_mark: *{instance}* を {seconds} 秒で再起動しました。まもなく JupyterLab が使えます。",
    },
    "reply.failed": {
        "en": ":x: I could not restart *{instance}*: {error}. The organizers have been told.",
        "ja": ":x: *{instance}* を再起動できませんでした: {error}。運営に通知しました。",
    },
    # A button's failure, answered to the organizer who pressed it.
    "reply.failed.pause": {
        "en": ":x: I could not pause restarts of *{instance}*: {error}.",
        "ja": ":x: *{instance}* の再起動を一時停止できませんでした: {error}。",
    },
    "reply.failed.resume": {
        "en": ":x: I could not resume restarts of *{instance}*: {error}.",
        "ja": ":x: *{instance}* の再起動を再開できませんでした: {error}。",
    },
    "reply.failed.stop": {
        "en": ":x: I could not stop *{instance}*: {error}.",
        "ja": ":x: *{instance}* を停止できませんでした: {error}。",
    },
    "reply.failed.resize": {
        "en": ":x: I could not resize *{instance}*: {error}.",
        "ja": ":x: *{instance}* のマシンタイプを変更できませんでした: {error}。",
    },
    # What a participant is told of an API error: its status, not the API's message (permissions, resource paths).
    "error.short": {
        "en": "the Workbench API answered {status}",
        "ja": "Workbench API のエラー ({status})",
    },
    # ...and of a failure of the bot's own (no answer of the API's): the organizers' alert has the detail.
    "error.internal": {"en": "an internal error", "ja": "内部エラー"},
    "reply.skipped": {  # the reason is an outcome line, which already says "Not restarted"
        "en": "*{instance}*: {reason}",
        "ja": "*{instance}*: {reason}",
    },
    "reply.not_resized": {
        "en": ":pause_button: *{instance}* was not resized: it is {state}. Press {button} again once it is "
              "ACTIVE or STOPPED.",
        "ja": ":pause_button: *{instance}* のマシンタイプは変更しませんでした: {state} 状態です。ACTIVE か STOPPED に"
              "なってから、もう一度「{button}」を押してください。",
    },
    "reply.not_stopped": {
        "en": ":pause_button: *{instance}* was not stopped: it is {state}.",
        "ja": ":pause_button: *{instance}* は停止しませんでした: {state} 状態です。",
    },
    "reply.done": {"en": ":white_check_mark: {what}", "ja": ":white_check_mark: {what}"},
}
