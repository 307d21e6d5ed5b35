"""Memory, before and after a kill, in English and Japanese: the memory-pressure warnings (warn.*) and the
bigger-machine flow (resize.*: the offer, the organizers' request and its buttons, each step of the resize, what
a step left behind, and what the participant is told).
"""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

MEMORY: Final[dict[str, dict[Lang, str]]] = {
    # ---- memory pressure and bigger machines (before and after the kill) ----------------------
    "warn.dm": {
        "en": ":warning: Your notebook *{instance}* is using {percent} of its memory. Save your work now, free large objects (`del df; gc.collect()`), or ask for a bigger machine with `/restart-notebook bigger`. If memory runs out, the kernel is killed and unsaved work is lost.",
        "ja": ":warning: ノートブック *{instance}* のメモリ使用率が {percent} に達しています。今のうちに作業を保存し、大きなオブジェクトを解放する (`del df; gc.collect()`) か、`/restart-notebook bigger` で大きいマシンを依頼してください。メモリが尽きるとカーネルが強制終了され、未保存の作業は失われます。",
    },
    "warn.channel": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; I warned {owner}.",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。{owner} さんに警告しました。",
    },
    "warn.channel.unreached": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; I could not reach its owner {owner} "
        "by DM.",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。所有者 {owner} さんに DM "
        "を送れませんでした。",
    },
    "warn.channel.no_owner": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; it has no owner to warn "
        "(no proxy-user-mail).",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。警告する所有者がいません "
        "(proxy-user-mail なし)。",
    },
    "warn.channel.no_dm": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; its owner {owner} was not messaged "
        "(OWNER_DM=false).",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。所有者 {owner} さんには "
        "連絡していません (OWNER_DM=false)。",
    },
    # The quiet period is a label: on an instance with no room for it, every memory alert warns again.
    "warn.not_recorded": {
        "en": ":label: I can't record this warning on the instance, so its quiet period doesn't hold: the warning "
        "repeats at every memory alert. {labels}.",
        "ja": ":label: この警告をインスタンスに記録できないため、再通知までの待機期間が効かず、メモリアラートのたびに"
        "警告を繰り返します。{labels}。",
    },
    "warn.unknown_percent": {"en": "a high share", "ja": "高い割合"},
    "resize.offer": {
        "en": "Give it more memory: {current} → {next}{cost}",
        "ja": "メモリを増やす: {current} → {next}{cost}",
    },
    "resize.cost": {"en": " (+${delta}/h)", "ja": " (+${delta}/時)"},
    "resize.request": {
        "en": ":arrow_up: {requester} asks for more memory for *{instance}*: {current} ({current_mem}) → {next} ({next_mem}){cost}.",
        "ja": ":arrow_up: {requester} さんが *{instance}* のメモリ増設を依頼しています: {current} ({current_mem}) → {next} ({next_mem}){cost}。",
    },
    "resize.asked": {
        "en": ":incoming_envelope: I asked the organizers to move *{instance}* from {current} to {next}. You'll hear from me when they decide. If they approve, the notebook is stopped and started again on the new machine: anything only in memory is lost, so save your work.",
        "ja": ":incoming_envelope: *{instance}* を {current} から {next} に変更するよう運営に依頼しました。決まり次第お知らせします。承認されるとノートブックは停止し、新しいマシンで再起動します。メモリ上のデータは失われるので、作業を保存しておいてください。",
    },
    # slack_app's answer: the worker posts the request (or finds one still open) and says which through response_url.
    "resize.queued": {
        "en": ":incoming_envelope: Asking the organizers to move *{instance}* from {current} to {next}: I'll confirm here once they have your request. If they approve, the notebook is stopped and started again on the new machine: anything only in memory is lost, so save your work.",
        "ja": ":incoming_envelope: *{instance}* を {current} から {next} に変更するよう運営に依頼しています。依頼が届いたらここでお知らせします。承認されるとノートブックは停止し、新しいマシンで再起動します。メモリ上のデータは失われるので、作業を保存しておいてください。",
    },
    "resize.ask_too_old": {
        "en": ":warning: I didn't ask the organizers: your `/restart-notebook bigger` reached me {age} after you sent it, later than the {limit} I act on. Send it again if you still want a bigger machine.",
        "ja": ":warning: 運営には依頼していません: `/restart-notebook bigger` が届いたのは送信から {age} 後で、対応上限 {limit} を超えていました。まだ必要ならもう一度送ってください。",
    },
    "resize.still_open": {
        "en": ":hourglass_flowing_sand: Your request to move *{instance}* to a bigger machine, sent {since}, is still with the organizers: I haven't asked again. You'll hear from me when they decide.",
        "ja": ":hourglass_flowing_sand: *{instance}* を大きいマシンに変更する依頼 ({since} 送信) は運営が確認中のため、重ねて依頼していません。決まり次第お知らせします。",
    },
    "resize.daily_limit": {
        "en": ":no_entry_sign: You've sent {count} requests for a bigger machine in the last 24 hours, the most there can be. Ask the organizers directly if it can't wait.",
        "ja": ":no_entry_sign: 過去 24 時間に大きいマシンへの変更依頼を {count} 件送っており、これが上限です。急ぎの場合は運営に直接ご相談ください。",
    },
    "resize.largest": {
        "en": ":information_source: *{instance}* is already on {current}, the largest machine on the ladder; ask an organizer.",
        "ja": ":information_source: *{instance}* はすでに最大のマシン {current} です。運営に相談してください。",
    },
    # No offer for a type off the ladder, or one whose every later rung would cut vCPUs or GPUs.
    "resize.no_offer": {
        "en": ":information_source: I have no bigger machine to offer *{instance}* ({current}): {why}, and I only offer one with more memory, at least as many vCPUs and the same GPUs. Ask an organizer.",
        "ja": ":information_source: *{instance}* ({current}) に提案できる大きいマシンがありません: {why}。提案するのは、メモリが多く、vCPU 数が同じ以上で、同じ GPU を持つマシンだけです。運営に相談してください。",
    },
    "resize.why.off_ladder": {
        "en": "{current} is not on the ladder of machines I move notebooks along ({ladder})",
        "ja": "{current} は変更先マシンの一覧 ({ladder}) にありません",
    },
    "resize.why.no_fit": {
        "en": "no machine after {current} on the ladder ({ladder}) fits it",
        "ja": "一覧 ({ladder}) で {current} より後のマシンはどれも条件を満たしません",
    },
    "button.approve": {"en": "Approve", "ja": "承認"},
    "button.deny": {"en": "Deny", "ja": "却下"},
    "button.ack.resize": {"en": "Resizing `{name}`…", "ja": "`{name}` のマシンタイプを変更しています…"},
    "resize.denied_by": {
        "en": ":no_entry_sign: Denied by {who} at {time}",
        "ja": ":no_entry_sign: {time} に {who} さんが却下しました",
    },
    "resize.denied_dm": {
        "en": "The organizers declined a bigger machine for *{instance}* for now. Ask them in the channel if you need it.",
        "ja": "*{instance}* のマシン増強は今回は見送られました。必要であればチャンネルで運営に相談してください。",
    },
    "resize.step.stopping": {"en": ":stop_button: Stopping {instance} (was {current})…", "ja": ":stop_button: {instance} を停止しています (現在 {current})…"},
    "resize.step.updating": {"en": ":gear: Changing the machine type to {next}…", "ja": ":gear: マシンタイプを {next} に変更しています…"},
    "resize.step.starting": {"en": ":arrow_forward: Starting {instance} on {machine}…", "ja": ":arrow_forward: {machine} で {instance} を起動しています…"},
    "resize.done": {
        "en": ":white_check_mark: {instance} now runs on {next} ({memory}), resized by {who} in {seconds} s",
        "ja": ":white_check_mark: {instance} は {next} ({memory}) で稼働中です ({who} さんが変更、{seconds} 秒)",
    },
    "resize.failed": {
        "en": ":x: Resize failed while {step}: {error}. {state}",
        "ja": ":x: {step}中にマシンタイプの変更に失敗しました: {error}。{state}",
    },
    "resize.state.running_old": {
        "en": "The instance is running again on its old machine type {current}.",
        "ja": "インスタンスは元のマシンタイプ {current} で再び稼働しています。",
    },
    "resize.state.stopped": {
        "en": "The instance is STOPPED on {machine}; start it from the console or try again.",
        "ja": "インスタンスは {machine} で停止したままです。コンソールから起動するか、再度お試しください。",
    },
    "resize.state.unchanged": {
        "en": "Nothing was changed; the instance is still running on {current}.",
        "ja": "何も変更されていません。インスタンスは {current} で稼働中です。",
    },
    # A step still running when the worker's time ran out: what a read of the instance shows, and what to do.
    "resize.unconfirmed": {
        "en": ":warning: Resize not finished: my time ran out {seconds} s into {step}, which was still in progress. {state}",
        "ja": ":warning: マシンタイプの変更は完了していません: {step}の開始から {seconds} 秒で処理時間の上限に達しました ({step}は進行中)。{state}",
    },
    "resize.now.stopping": {
        "en": "{instance} is still STOPPING; it will be left STOPPED on {machine}. Once it has stopped, {then}.",
        "ja": "{instance} はまだ停止処理中 (STOPPING) で、{machine} のまま停止 (STOPPED) します。停止したら、{then}。",
    },
    "resize.now.stopped": {
        "en": "{instance} is STOPPED on {machine}: {then}.",
        "ja": "{instance} は {machine} で停止 (STOPPED) しています。{then}。",
    },
    "resize.now.starting": {
        "en": "{instance} is still STARTING on {machine}; it should be running in a few minutes. `/restart-notebook status` shows when it is ACTIVE; if it does not get there, look at it in the Cloud console.",
        "ja": "{instance} は {machine} でまだ起動処理中 (STARTING) です。数分で稼働するはずです。`/restart-notebook status` で ACTIVE になったか確認でき、ならない場合は Cloud コンソールで確認してください。",
    },
    "resize.now.running": {
        "en": "{instance} is running on {machine}.",
        "ja": "{instance} は {machine} で稼働しています。",
    },
    "resize.now.other": {
        "en": "{instance} is {state} on {machine}: look at it in the Cloud console.",
        "ja": "{instance} は {machine} で {state} 状態です。Cloud コンソールで確認してください。",
    },
    "resize.now.unknown": {
        "en": "I could not read {instance} ({error}): look at it in the Cloud console.",
        "ja": "{instance} の状態を取得できませんでした ({error})。Cloud コンソールで確認してください。",
    },
    "resize.then.approve": {
        "en": "press {button} again to finish the resize to {target}, or start it from the Cloud console to keep {machine}",
        "ja": "もう一度「{button}」を押すと {target} への変更を完了します。{machine} のままでよければ Cloud コンソールから起動してください",
    },
    "resize.then.console": {
        "en": "start it from the Cloud console",
        "ja": "Cloud コンソールから起動してください",
    },
    "resize.dm_done": {
        "en": ":tada: Your notebook *{instance}* now has more memory: {next} ({memory}). It was restarted to apply it.",
        "ja": ":tada: ノートブック *{instance}* のメモリを増やしました: {next} ({memory})。反映のため再起動しました。",
    },
    # An Approve that has nothing left to do, or no instance to do it on: the request is closed with these.
    "resize.already_that_size": {
        "en": ":information_source: *{instance}* is already on {machine} ({memory}): nothing to resize, no restart.",
        "ja": ":information_source: *{instance}* はすでに {machine} ({memory}) です。変更も再起動もしません。",
    },
    "resize.already_bigger": {
        "en": ":information_source: *{instance}* is already on {current} ({memory}), at least what was asked ({target}, {target_memory}): not resized, no restart.",
        "ja": ":information_source: *{instance}* はすでに {current} ({memory}) で、依頼された {target} ({target_memory}) 以上です。変更も再起動もしません。",
    },
    "resize.size_unknown": {
        "en": ":warning: *{instance}* is now on {current}, whose memory I don't know, so I did not move it to {target} ({target_memory}): that could make it smaller. Change it in the Cloud console if it needs more.",
        "ja": ":warning: *{instance}* は現在 {current} で、そのメモリ量が分からないため {target} ({target_memory}) には変更しませんでした (小さくなるおそれがあります)。増やす必要があれば Cloud コンソールで変更してください。",
    },
    "resize.unreadable": {
        "en": ":x: *{instance}* was not resized: I could not read it ({error}).",
        "ja": ":x: *{instance}* のマシンタイプは変更していません: インスタンスを取得できませんでした ({error})。",
    },
    "resize.dm_stopping": {
        "en": ":hourglass_flowing_sand: The organizers approved more memory for your notebook *{instance}*: I'm stopping it now to move it to {next} ({memory}) and will start it again right after (a few minutes). Anything only in memory is lost: save what you can right away.",
        "ja": ":hourglass_flowing_sand: ノートブック *{instance}* のメモリ増設が承認されました。{next} ({memory}) に変更するため今から停止し、終わり次第起動します (数分かかります)。メモリ上のデータは失われるので、保存できるものはすぐに保存してください。",
    },
    "resize.asker_done": {
        "en": ":tada: The organizers approved your request: *{instance}* now runs on {next} ({memory}). It was restarted to apply it.",
        "ja": ":tada: 依頼が承認されました: *{instance}* は {next} ({memory}) で稼働しています。反映のため再起動しました。",
    },
    # The participant who asked, when the request ends without a resize: a reason below, in their terms.
    "resize.asker_not_resized": {
        "en": ":information_source: *{instance}* was not resized: {reason}.",
        "ja": ":information_source: *{instance}* のマシンタイプは変更されませんでした: {reason}。",
    },
    "resize.why_not.already_bigger": {
        "en": "it is already on {current} ({memory}), at least what you asked for ({target}, {target_memory})",
        "ja": "すでに {current} ({memory}) で、依頼された {target} ({target_memory}) 以上です",
    },
    "resize.why_not.size_unknown": {
        "en": "it is now on {current}, whose memory I don't know, so I did not move it to {target} "
        "({target_memory}); ask an organizer if it needs more",
        "ja": "現在の {current} のメモリ量が分からないため、{target} ({target_memory}) には変更しませんでした。"
        "さらに必要であれば運営に相談してください",
    },
    "resize.why_not.unreadable": {
        "en": "I could not read the notebook ({error})",
        "ja": "ノートブックの情報を取得できませんでした ({error})",
    },
    "resize.why_not.not_active": {
        "en": "it was {state} when the organizers approved; they can approve again once it is running or stopped",
        "ja": "承認の時点で {state} 状態でした。起動または停止した後に、運営が再度承認できます",
    },
    "resize.why_not.too_old": {
        "en": "the organizers' approval reached me {age} after they gave it, later than the {limit} I act on; "
        "they can approve again",
        "ja": "運営の承認が届いたのは {age} 後で、対応上限 {limit} を超えていました。運営は再度承認できます",
    },
    "resize.dm_failed": {
        "en": ":warning: The organizers approved more memory for *{instance}*, but the move to {next} did not finish as it should. They have been told and will look at it; `/restart-notebook status` shows its state.",
        "ja": ":warning: *{instance}* のメモリ増設は承認されましたが、{next} への変更が正常に完了しませんでした。運営に通知済みで、対応します。状態は `/restart-notebook status` で確認できます。",
    },
    "resize.step_name.stop": {"en": "stopping", "ja": "停止"},
    "resize.step_name.update": {"en": "changing the machine type", "ja": "マシンタイプ変更"},
    "resize.step_name.start": {"en": "starting", "ja": "起動"},
}
